"""Bulk import of URLs from a CSV file with a header, or a plain list with one URL per line.

The CSV's columns are a URL's fields and, optionally, its images and alternates (csv_rows).

Rows are validated one by one (a row is stored whole or not at all) and written in batches:
one query finds which locs exist, then executemany inserts and updates. Large files are
validated in a second process while this one parses and writes, so two cores work, where this
process may start one (the command line); a Celery worker's process validates them itself. The
caller commits; a file that cannot be read at all raises ImportFormatError and stores nothing.
"""

from __future__ import annotations

import bisect
import csv
import multiprocessing
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TextIO

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, rule_text, said_of
from webapp.models import Site, Url
from webapp.protocol import normalize_changefreq, normalize_lastmod, normalize_priority
from webapp.protocol.news import NewsData
from webapp.said import Line, english, said, said_plural, verbatim
from webapp.urls.by_loc import stored_by_loc
from webapp.urls.changes import count_live, hold_site, next_change_seq
from webapp.urls.children import Children, write_children
from webapp.urls.csv_rows import CSV_COLUMNS, EXTENSION_COLUMNS, MAX_ROW_CHARS, validate_text
from webapp.urls.csv_rows import FIELDS as COLUMNS  # the columns a URL's own row stores
from webapp.urls.encodings import undecodable
from webapp.urls.exclusions import Rules
from webapp.urls.news import store_news
from webapp.urls.video_cells import without_anchor
from webapp.verify.publishing import counts_as_change

CHUNK_CHARS = 512 * 1024  # about 5,000 rows: one existence query and one executemany each
MAX_REPORTED = 10_000  # rejections kept word for word; beyond that they are only counted
PARALLEL_FROM_BYTES = 4 << 20  # below this, starting a second process costs more than it saves

@dataclass
class ImportReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    duplicates: int = 0
    change_seq: int = 0  # the site's change number this import's writes carry, once it has one
    last_id_before: int | None = None  # URL ids above it, in this site, are this import's
    # (line, why), said items (webapp.said): each reader hears them in their language
    rejections: list[tuple[int, Line]] = field(default_factory=list)
    notes: list[tuple[int, Line]] = field(default_factory=list)  # rows kept with a change
    noted: int = 0
    warnings: list[Line] = field(default_factory=list)  # stored, but will not work as meant
    excluded: Counter[str] = field(default_factory=Counter)  # exclusion rule -> rows refused
    unchanged_locs: set[str] | None = None  # a set: write_batch adds the locs it left alone

    def hold_site(self, session: Session, site_id: int) -> int:
        """Hold the site's URLs for this transaction (at its first batch), and note the newest
        URL id then: a row of the site above it was added by this import, not by another."""
        if self.last_id_before is None:
            hold_site(session, site_id)
            self.last_id_before = session.scalar(select(func.max(Url.id))) or 0
        return self.last_id_before

    def take_change_seq(self, session: Session, site_id: int) -> int:
        """One change number for the whole import, taken (locking the site) at its first change."""
        if not self.change_seq:
            self.change_seq = next_change_seq(session, site_id)
        return self.change_seq

    def reject(self, line: int, reason: Line | str) -> None:
        self.rejected += 1
        reason = verbatim(reason) if isinstance(reason, str) else reason
        if len(self.rejections) < MAX_REPORTED:
            self.rejections.append((line, reason))

    def note(self, line: int, text: Line | str) -> None:
        """A row stored with a change the person should hear of (a fragment removed)."""
        self.noted += 1
        text = verbatim(text) if isinstance(text, str) else text
        if len(self.notes) < MAX_REPORTED:
            self.notes.append((line, text))

    def report_lines(self) -> list[Line]:
        """What the import did, line by line, for the reader's language (said.render)."""
        first = [said("added %(added)s, updated %(updated)s, unchanged %(unchanged)s, "
                      "rejected %(rejected)s", added=self.added, updated=self.updated,
                      unchanged=self.unchanged, rejected=self.rejected)]
        if self.excluded:
            first.append(said(", excluded %(excluded)s", excluded=self.excluded.total()))
        if self.duplicates:
            first.append(said_plural(
                " (%(num)s line repeated a loc already in the file: the last one is kept)",
                " (%(num)s lines repeated a loc already in the file: the last one is kept)",
                self.duplicates))
        if self.noted:
            first.append(said("; %(noted)s kept with a note (listed below)", noted=self.noted))
        excluded = [said("excluded by rule `%(rule)s`: %(count)s", rule=rule, count=count)
                    for rule, count in sorted(self.excluded.items(),
                                              key=lambda item: (-item[1], item[0]))]
        return [first, *excluded, *self.warnings]

    def summary(self) -> str:
        """What the import did, in English (the CLI's report)."""
        return english(self.report_lines())

    def english_rejections(self) -> list[tuple[int, str]]:
        """(line, reason in English) of each rejected row kept word for word (the CLI's)."""
        return [(line, english([reason])) for line, reason in self.rejections]

    def english_notes(self) -> list[tuple[int, str]]:
        return [(line, english([note])) for line, note in self.notes]

    def listed(self) -> list[Line]:
        """Each noted and each rejected row, one line each (a task's report)."""
        return [said("line %(line)s: %(reason)s", line=line, reason=reason)
                for line, reason in self.rejections + self.notes]


class ImportFormatError(ValueError):
    """The file as a whole cannot be read (not the fault of one row). The message is text, or
    a rule_text that each reader of a task's report hears in their own language."""

    def said_line(self) -> Line:
        return said_of(self.args[0] if self.args else type(self).__name__)


def read_header(stream: TextIO) -> tuple[tuple[str, ...], int, str]:
    """The file's columns, the number of the first data line, and that line when it is data.

    A first line naming `loc` is a CSV header; otherwise the file is a plain list of URLs,
    unless its first line looks like a CSV row, which would store whole rows as locs.
    """
    number, first = 0, ""
    while not first.strip():
        first = stream.readline(MAX_ROW_CHARS + 1)
        number += 1
        if len(first) > MAX_ROW_CHARS and not first.endswith("\n"):
            raise _runs_on(number, quoted=False)
        if number == 1:
            first = first.lstrip("\ufeff")
        if not first:
            return (), number, ""
    cells = [cell.strip() for cell in next(csv.reader([first]), [])]
    header = [cell.lower() for cell in cells]
    if "loc" in header:
        unknown = [name for name in header if name not in CSV_COLUMNS]
        repeated = [name for name in header if header.count(name) > 1]
        if unknown or repeated:
            raise ImportFormatError(
                f"line {number}: unknown or repeated column {(unknown or repeated)[0]!r}; the "
                f"columns are {', '.join(CSV_COLUMNS)} (loc is required)")
        for name in ("image_titles", "image_captions"):
            if name in header and "images" not in header:
                raise ImportFormatError(f"line {number}: the column {name} needs an images "
                                        "column: one line of it per image")
        if without_anchor(header):
            raise ImportFormatError(f"line {number}: the column {without_anchor(header)} needs "
                                    "a video_thumbnail_locs column: one line of it per video")
        return tuple(header), number + 1, ""
    if len(cells) > 1 and (not cells[0].lower().startswith(("http://", "https://"))
                           or any(_is_field_value(cell) for cell in cells[1:])):
        raise ImportFormatError(
            f"line {number} looks like CSV but there is no header line naming a loc column; "
            f"start the file with a header such as {','.join(COLUMNS)}")
    return (), number, first


def _is_field_value(cell: str) -> bool:
    for rule in (normalize_lastmod, normalize_changefreq, normalize_priority):  # by form only
        try:
            if cell and rule(cell) is not None:
                return True
        except InvalidValue:
            pass
    return False


def text_chunks(stream: TextIO, first_line: int, first: str, quoted: bool,
                size: int) -> Iterator[tuple[int, str]]:
    """(number of its first line, text) pieces of whole lines; with `quoted` (CSV), never
    cutting inside a quoted field (a field left open runs to the end of the file, as in CSV)."""
    line, carry = first_line, first
    while True:
        block = stream.read(size)
        text = carry + block
        if not block:
            if text:
                yield line, text
            return
        cut = _cut(text, quoted)
        if cut:
            yield line, text[:cut]
            line += text.count("\n", 0, cut)
        carry = text[cut:]
        if len(carry) > MAX_ROW_CHARS:  # a row that ends in the next block may be a block longer
            raise _runs_on(line, quoted)


def _runs_on(line: int, quoted: bool) -> ImportFormatError:
    if quoted:
        return ImportFormatError(rule_text(
            "line %(line)s runs on for more than %(limit)s characters without a line break "
            "outside a quoted field, longer than any row; nothing was imported",
            line=line, limit=f"{MAX_ROW_CHARS:,}"))
    return ImportFormatError(rule_text(
        "line %(line)s runs on for more than %(limit)s characters without a line break, "
        "longer than any row; nothing was imported", line=line, limit=f"{MAX_ROW_CHARS:,}"))


# A quoted field as the csv module reads one: the quote opens it only at the start of a field
# (a quote inside an unquoted field, as in 5"-screen, is a plain character); "" is a quote.
# Possessive: a field left open is scanned once, where backtracking kept a record of every
# character (2 GB for 16 million characters).
_QUOTED_FIELD = re.compile(r'(?:^|(?<=[,\n]))"(?:[^"]++|"")*+(?:"|\Z)')


def _cut(text: str, quoted: bool) -> int:
    """Where to end a chunk: after the last line break outside quoted fields (0: none yet)."""
    cut = text.rfind("\n") + 1
    if not quoted or '"' not in text:
        return cut
    spans = [match.span() for match in _QUOTED_FIELD.finditer(text)]
    starts = [start for start, _ in spans]
    while cut:
        at = bisect.bisect_right(starts, cut - 1) - 1  # the last field starting before the break
        if at < 0 or spans[at][1] <= cut - 1:
            return cut
        cut = text.rfind("\n", 0, spans[at][0]) + 1
    return 0


def may_start_a_process() -> bool:
    """Whether this process may start a second one to validate in: not when it is daemonic, as
    a Celery prefork worker's child is. multiprocessing refuses it there (such a process is
    stopped without waiting for children of its own), and the worker's --concurrency already
    gives each core a process of its own to run tasks in."""
    return not multiprocessing.current_process().daemon


def _map_ahead(pool: ProcessPoolExecutor, function: Callable, chunks: Iterable) -> Iterator:
    """Like map, in the worker, with at most two chunks in flight so memory stays bounded."""
    in_flight: deque[Future] = deque()
    for chunk in chunks:
        in_flight.append(pool.submit(function, chunk))
        if len(in_flight) == 2:
            yield in_flight.popleft().result()
    while in_flight:
        yield in_flight.popleft().result()


def import_urls(session: Session, site: Site, stream: TextIO, parallel: bool | None = None,
                chunk_chars: int = CHUNK_CHARS,
                progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Upsert by loc every valid row of `stream` into `site`; report what happened to each.

    `parallel` parses and validates in a second process while this one writes; by default it
    does so for files over 4 MiB where this process may start one (may_start_a_process).
    `progress(characters read, size)` hears after each chunk.
    """
    report = ImportReport()
    size = _size(stream)
    if parallel is None:
        parallel = size >= PARALLEL_FROM_BYTES and may_start_a_process()
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) if parallel \
        else None
    try:
        columns, first_line, first = read_header(stream)
        validate = partial(validate_text, site.base_url, site.encoding, columns,
                           rules=Rules.of(site))
        fields = tuple(name for name in columns or ("loc",) if name not in EXTENSION_COLUMNS)
        extended = len(fields) != len(columns or ("loc",))  # rows end with images, alternates
        loc_at = fields.index("loc")
        chunks = text_chunks(stream, first_line, first, quoted=bool(columns), size=chunk_chars)
        checked = _map_ahead(pool, validate, chunks) if pool else map(validate, chunks)
        for valid, rejected, noted, excluded in checked:
            report.excluded.update(excluded)
            for line, reason in rejected:
                report.reject(line, reason)
            for line, note in noted:
                report.note(line, note)
            batch: dict[str, tuple] = {}
            for values in valid:
                loc = values[loc_at]
                if loc in batch:
                    report.duplicates += 1
                batch[loc] = values
            if batch and extended:
                _write_extended(session, site, columns, batch, report)
            elif batch:
                write_batch(session, site, fields, batch, report)
            if progress and size:
                progress(min(stream.tell(), size), size)
    except UnicodeDecodeError as exc:
        raise ImportFormatError(undecodable(stream, exc)) from None
    except csv.Error as exc:
        raise ImportFormatError(f"the file cannot be read as CSV: {exc}") from None
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return report


def _write_extended(session: Session, site: Site, columns: tuple[str, ...],
                    batch: dict[str, tuple], report: ImportReport) -> None:
    """write_batch for rows that end with their images, alternates, videos and news data,
    then those. Without a column of image titles (or captions), an image keeps the stored
    ones."""
    report.unchanged_locs = set()
    fields = tuple(name for name in columns if name not in EXTENSION_COLUMNS)
    write_batch(session, site, fields, {loc: values[:-4] for loc, values in batch.items()},
                report)
    write_extensions(session, site, [
        Children(loc, images, None if alternates is None else dict(alternates), videos)
        for loc, (*_, images, alternates, videos, _) in batch.items()], report,
        frozenset(kept for kept, column in (("title", "image_titles"),
                                            ("caption", "image_captions"))
                  if column not in columns))
    store_news(session, site, {loc: NewsData(*news) if news else None
                               for loc, (*_, news) in batch.items() if news is not None}, report)
    report.unchanged_locs = None


def write_extensions(session: Session, site: Site, urls: list[Children],
                     report: ImportReport, keep: frozenset[str] = frozenset()) -> None:
    """Store the images, alternates and videos of URLs that write_batch has just written with
    `report.unchanged_locs` kept: a URL whose only change is there counts as updated."""
    changed = write_children(session, site, urls,
                             lambda: report.take_change_seq(session, site.id), keep)
    move_to_updated(report, changed)


def move_to_updated(report: ImportReport, changed: set[str]) -> None:
    """Count as updated the locs written unchanged whose extensions changed (each once)."""
    moved = changed & report.unchanged_locs
    report.unchanged_locs -= moved
    report.unchanged, report.updated = report.unchanged - len(moved), report.updated + len(moved)


def _size(stream: TextIO) -> int:
    try:
        return stream.seek(0, 2) - stream.seek(0) if stream.seekable() else 0
    except OSError:
        return 0


def _insert_many(connection: Connection, rows: list[tuple]) -> None:
    """Insert (site_id, change_seq, loc, lastmod, changefreq, priority) tuples at driver speed.

    SQLAlchemy's executemany builds and processes a parameter dict per row, which doubled the
    cost of a large import; the values here are already validated, and bound, never spliced.
    """
    names = ("site_id", "change_seq", *COLUMNS)
    if connection.dialect.name == "postgresql":
        # COPY, in the same transaction: a tenth of the time of even a pipelined executemany.
        statement = f"COPY {Url.__tablename__} ({', '.join(names)}) FROM STDIN"
        cursor = connection.connection.dbapi_connection.cursor()
        try:
            with cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
        except connection.dialect.dbapi.IntegrityError as exc:  # as any other statement's
            raise IntegrityError(statement, None, exc) from None
        finally:
            cursor.close()
        return
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    connection.exec_driver_sql(
        f"INSERT INTO {Url.__tablename__} ({', '.join(names)}) "
        f"VALUES ({', '.join([mark] * len(names))})", rows)


def write_batch(session: Session, site: Site, columns: tuple[str, ...],
                batch: dict[str, tuple], report: ImportReport) -> None:
    """Insert the new locs, update the changed ones, undelete the deleted ones.

    `batch` maps each loc to its checked values in the order of `columns`; columns left out
    keep their stored values. The site is held first (report.hold_site), so what is read
    here is what is there when the rows are written.
    """
    last_id_before = report.hold_site(session, site.id)
    connection = session.connection()
    existing = {row.loc: row for row in stored_by_loc(session, site.id, batch, (
        Url.id, Url.loc, Url.deleted_at, *(getattr(Url, name) for name in COLUMNS[1:])))}
    positions = [(columns.index(name) if name in columns else None) for name in COLUMNS]
    inserts, updates = [], []

    def seq() -> int:
        return report.take_change_seq(session, site.id)

    added_before = report.added

    for loc, values in batch.items():
        row = existing.get(loc)
        if row is None:
            inserts.append((site.id, seq(), *(None if i is None else values[i] for i in positions)))
            report.added += 1
            continue
        given = dict(zip(columns, values))
        changed = {name: value for name, value in given.items() if getattr(row, name) != value}
        if row.id > last_id_before and row.deleted_at is None:
            report.duplicates += 1
            if changed:
                updates.append({"id": row.id, "deleted_at": None, "change_seq": seq(), **changed})
        elif row.deleted_at is not None:
            updates.append({"id": row.id, "deleted_at": None, "change_seq": seq(), **given})
            report.added += 1
        elif changed and not counts_as_change(site, changed):
            # Stored, but what is published does not move (a date the site does not publish).
            updates.append({"id": row.id, "deleted_at": None, **changed})
            report.updated += 1
        elif changed:
            updates.append({"id": row.id, "deleted_at": None, "change_seq": seq(), **changed})
            report.updated += 1
        else:
            report.unchanged += 1
            if report.unchanged_locs is not None:
                report.unchanged_locs.add(loc)
    if inserts:
        _insert_many(connection, inserts)
    if updates:
        session.execute(update(Url), updates)  # ORM bulk update by primary key
    count_live(session, site.id, report.added - added_before)
