"""Parsing and checking a piece of an import file, apart from the rest of the application.

Large imports run this in a worker process, which then imports only these rules.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from webapp.errors import InvalidValue
from webapp.protocol import FIELD_RULES, Scope

Row = tuple[int, list[str]]  # (line number, cells)


def _rows(columns: tuple[str, ...], first_line: int, text: str) -> Iterator[Row]:
    """(number of the line the row starts on, cells) for every non-blank row of a chunk."""
    if not columns:
        for number, raw in enumerate(text.split("\n"), start=first_line):
            raw = raw.strip()
            if raw and not raw.startswith("#"):
                yield number, [raw]
        return
    reader = csv.reader(io.StringIO(text))
    consumed = 0
    for cells in reader:
        start, consumed = first_line + consumed, reader.line_num
        if cells:
            yield start, cells


def validate_text(base_url: str, encoding: str, columns: tuple[str, ...],
                  chunk: tuple[int, str]) -> tuple[list[tuple], list[tuple[int, str]],
                                                   list[tuple[int, str]]]:
    """Parse and check a piece of the file: valid values in column order, (line, reason) of
    each row rejected, and (line, note) of each row kept with a change (a fragment removed).

    A pure function of its arguments, so it can run in a worker process.
    """
    normalize_loc = Scope(base_url, encoding).normalize_noting
    names = columns or ("loc",)
    rules = [normalize_loc if name == "loc" else FIELD_RULES[name] for name in names]
    loc_at = names.index("loc")
    width = len(names)
    valid, rejected, noted = [], [], []
    for line, cells in _rows(columns, *chunk):
        if len(cells) != width:
            rejected.append((line, f"has {len(cells)} fields; the header has {width}"))
            continue
        try:
            values = [rule(cell) for rule, cell in zip(rules, cells)]
        except InvalidValue as exc:
            rejected.append((line, str(exc)))
            continue
        values[loc_at], note = values[loc_at]
        if note is not None:
            noted.append((line, str(note)))
        valid.append(tuple(values))
    return valid, rejected, noted
