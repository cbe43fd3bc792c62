"""Bulk import of URLs from a CSV file with a header, or a plain list with one URL per line.

Rows are validated one by one (a row is stored whole or not at all) and written in batches:
one query finds which locs exist, then executemany inserts and updates. The caller commits.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue
from webapp.models import Site, Url, utcnow
from webapp.urls import FIELD_RULES, scope_of

COLUMNS = ("loc", *FIELD_RULES)
BATCH_SIZE = 5000
MAX_REPORTED = 10_000  # rejections kept word for word; beyond that they are only counted


@dataclass
class ImportReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    duplicates: int = 0
    rejections: list[tuple[int, str]] = field(default_factory=list)

    def reject(self, line: int, reason: str) -> None:
        self.rejected += 1
        if len(self.rejections) < MAX_REPORTED:
            self.rejections.append((line, reason))

    def summary(self) -> str:
        text = (f"added {self.added}, updated {self.updated}, unchanged {self.unchanged}, "
                f"rejected {self.rejected}")
        if self.duplicates:
            text += f" ({self.duplicates} lines repeated a loc of a later line, which was kept)"
        return text


class ImportFormatError(ValueError):
    """The file as a whole cannot be read (not the fault of one row)."""


def read_rows(stream: TextIO) -> tuple[tuple[str, ...], Iterator[tuple[int, list[str]]]]:
    """The columns of the file and its (line number, cells) rows; a CSV needs a `loc` column."""
    first = stream.readline().lstrip("\ufeff")
    header = [cell.strip().lower() for cell in next(csv.reader([first]), [])]
    if "loc" not in header:
        lines = ((n, [text.strip()]) for n, text in enumerate(stream, start=2))
        rows = (row for row in lines if row[1][0] and not row[1][0].startswith("#"))
        if first.strip() and not first.startswith("#"):
            rows = _prepend((1, [first.strip()]), rows)
        return ("loc",), rows
    unknown = [name for name in header if name not in COLUMNS]
    if unknown or len(set(header)) != len(header):
        raise ImportFormatError(f"line 1: unknown or repeated column {(unknown or header)[0]!r}; "
                                f"the columns are {', '.join(COLUMNS)} (loc is required)")
    reader = csv.reader(stream)
    return tuple(header), ((reader.line_num + 1, cells) for cells in reader if any(cells))


def _prepend(first, rest):
    yield first
    yield from rest


def import_urls(session: Session, site: Site, stream: TextIO) -> ImportReport:
    """Upsert by loc every valid row of `stream` into `site`; report what happened to each."""
    columns, rows = read_rows(stream)
    report = ImportReport()
    normalize_loc = scope_of(site).normalize
    optional = [(i, name, FIELD_RULES[name]) for i, name in enumerate(columns) if name != "loc"]
    loc_index = columns.index("loc")
    width = len(columns)
    batch: dict[str, tuple[int, dict]] = {}
    try:
        for line, cells in rows:
            if len(cells) != width:
                report.reject(line, f"has {len(cells)} fields; the header has {width}")
                continue
            try:
                values = {"loc": normalize_loc(cells[loc_index])}
                for i, name, rule in optional:
                    values[name] = rule(cells[i])
            except InvalidValue as exc:
                report.reject(line, str(exc))
                continue
            if values["loc"] in batch:
                report.duplicates += 1
            batch[values["loc"]] = (line, values)
            if len(batch) >= BATCH_SIZE:
                _write_batch(session, site, batch, report)
                batch = {}
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ImportFormatError(f"the file cannot be read as UTF-8 CSV or text: {exc}") from None
    if batch:
        _write_batch(session, site, batch, report)
    return report


def _write_batch(session: Session, site: Site, batch: dict[str, tuple[int, dict]],
                 report: ImportReport) -> None:
    fields = [name for name in COLUMNS if name != "loc"]
    existing = {row.loc: row for row in session.execute(
        select(Url.id, Url.loc, Url.deleted_at, *(getattr(Url, name) for name in fields))
        .where(Url.site_id == site.id, Url.loc.in_(list(batch))))}
    now = utcnow()
    inserts, updates = [], []
    for loc, (_line, values) in batch.items():
        row = existing.get(loc)
        if row is None:
            inserts.append({"site_id": site.id, "created_at": now, "updated_at": now,
                            "lastmod": None, "changefreq": None, "priority": None, **values})
            report.added += 1
            continue
        changed = {name: value for name, value in values.items() if getattr(row, name) != value}
        if row.deleted_at is not None:
            updates.append({"id": row.id, "deleted_at": None, "updated_at": now, **values})
            report.added += 1
        elif changed:
            updates.append({"id": row.id, "updated_at": now, **changed})
            report.updated += 1
        else:
            report.unchanged += 1
    connection = session.connection()
    if inserts:
        connection.execute(insert(Url.__table__), inserts)
    if updates:
        session.execute(update(Url), updates)
