"""The encodings a CSV or list file may be in, opening one as text, and telling a person in
their terms when a file is not in the encoding chosen (which line, and which one to choose).

Japanese spreadsheets save CSV in Shift_JIS (as Windows writes it: code page 932, a superset)
or EUC-JP; everything else is expected in UTF-8. A file that starts with a UTF-8 byte-order
mark is UTF-8 whatever was chosen, as browsers take it.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import BinaryIO, TextIO

from webapp.config import MAX_UNPACKED_MB
from webapp.errors import InvalidValue, rule_text
from webapp.urls.capped import CappedReader

# The choices by name (as the command line and the form send them), and what each is called
# and read with.
ENCODINGS = {"utf-8": "UTF-8", "shift_jis": "Shift_JIS", "euc-jp": "EUC-JP"}
_CODECS = {"utf-8": "utf-8-sig", "shift_jis": "cp932", "euc-jp": "euc_jp"}
_BOM = b"\xef\xbb\xbf"
_SAMPLE_BYTES = 1 << 20  # what a guess at the right encoding reads
MAX_UNPACKED = MAX_UNPACKED_MB << 20  # what a gzip one may unpack to, by default


class UnpackedTooLarge(ValueError):
    """A gzip file unpacks to more than the most the server reads (MAX_UNPACKED_MB)."""

    def __init__(self, limit: int):
        super().__init__(f"unpacks to more than {limit >> 20} MB")
        self.limit = limit


def check_encoding_choice(name: str) -> str:
    """The choice named (any case), or InvalidValue listing the choices."""
    key = (name or "").strip().lower()
    if key not in ENCODINGS:
        raise InvalidValue("encoding", name, rule_text("must be one of %(choices)s",
                                                        choices=", ".join(ENCODINGS)))
    return key


def open_text(path: Path, encoding: str, max_unpacked: int | None = None) -> TextIO:
    """A CSV or list file (plain or gzip) as text in the chosen encoding, lines as they are.

    A gzip file that unpacks to more than `max_unpacked` bytes raises UnpackedTooLarge where
    it is read past that (or sought to its end)."""
    with open(path, "rb") as probe:
        packed = probe.read(2) == b"\x1f\x8b"
    raw: BinaryIO = gzip.open(path, "rb") if packed else open(path, "rb")  # noqa: SIM115
    if packed and max_unpacked is not None:
        raw = io.BufferedReader(
            CappedReader(raw, max_unpacked, lambda: UnpackedTooLarge(max_unpacked)), 1 << 16)
    bom = raw.read(3) == _BOM
    raw.seek(0)
    return io.TextIOWrapper(raw, encoding="utf-8-sig" if bom else _CODECS[encoding], newline="")


def undecodable(stream: TextIO, error: UnicodeDecodeError) -> str:
    """What to tell a person whose file `stream` could not be read in its encoding."""
    codec = getattr(stream, "encoding", None) or "utf-8"
    chosen = next((key for key, name in _CODECS.items() if name == codec), None)
    raw = getattr(stream, "buffer", None)
    if chosen is None or raw is None or not raw.seekable():
        return f"the file cannot be read as {codec} text ({error.reason})"
    raw.seek(0)
    line = _first_bad_line(raw, codec)
    raw.seek(0)
    guess = _guess(raw.read(_SAMPLE_BYTES), exclude=chosen)
    if guess is None:
        return (f"line {line} of the file is not {ENCODINGS[chosen]} text. Save the file as "
                f"UTF-8, or choose the encoding it was saved in (--encoding on the command "
                f"line): {', '.join(ENCODINGS)}.")
    return (f"line {line} of the file is not {ENCODINGS[chosen]} text: the file looks like "
            f"{ENCODINGS[guess]}. Choose the encoding {guess} (--encoding {guess} on the "
            "command line) and import it again.")


def _first_bad_line(raw: BinaryIO, codec: str) -> int:
    """The number of the first line that is not text in `codec`. A line feed byte never stands
    inside a character of the encodings offered, so lines decode one by one."""
    number = 0
    for number, line in enumerate(raw, start=1):
        try:
            line.decode(codec)
        except UnicodeDecodeError:
            return number
    return number


def _guess(sample: bytes, exclude: str) -> str | None:
    """The offered encoding that reads the sample as the most Japanese text, if any reads it."""
    if len(sample) == _SAMPLE_BYTES:
        sample = sample[:sample.rfind(b"\n") + 1] or sample  # a character may be cut at the end
    scores = {}
    for key, codec in _CODECS.items():
        if key == exclude:
            continue
        try:
            text = sample.decode(codec)
        except UnicodeDecodeError:
            continue
        # Kana and kanji: text read in the wrong Japanese encoding turns into half-width kana
        # and symbols.
        scores[key] = sum(1 for c in text if "\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff")
    best = max(scores, key=scores.get, default=None)
    return best if best is not None and scores[best] else None
