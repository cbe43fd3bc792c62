"""How values read for people: URLs shown decoded (`https://例え.jp/日本語の記事`) while they
stay stored and published percent-encoded.

Only what cannot change a URL's meaning or be used to spoof one is decoded. A percent-escape of
an ASCII byte stays as it is (`%2F`, `%3F`, `%23`, `%25`, `%20`: decoding them would change
where the URL points or how it reads); so does every byte that is not part of a character of
the site's encoding, and every character that is invisible, a control or a bidi control, a
space, a private-use or unassigned code point, or that folds to a delimiter (`／`, `？`).
A host label is shown in Unicode only when it keeps to one script (Japanese, Korean and
Chinese labels may mix theirs with Latin letters) and is not a Cyrillic or Greek label built
of letters that look Latin (`аррӏе`), as browsers do; otherwise it stays in `xn--` form.

Re-encoding what is shown (each non-ASCII character in the site's encoding, each host label by
IDNA) gives back the URL as stored: the display loses nothing.
"""

from __future__ import annotations

import codecs
import re
import unicodedata

import idna
from flask import Flask

ESCAPES = re.compile(r"(?:%[89A-Fa-f][0-9A-Fa-f])+")  # runs of escaped non-ASCII bytes
# Categories never shown decoded: controls, format characters (bidi controls, zero-width
# joiners), separators (spaces), surrogates, private use, unassigned.
HIDDEN = {"Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn"}
DELIMITERS = set("/?#[]@%\\:")
# Scripts that may share a host label: how Japanese, Korean and Chinese names are written.
MIXABLE = [{"LATIN", "CJK", "HIRAGANA", "KATAKANA"}, {"LATIN", "HANGUL", "CJK"}]
# Cyrillic and Greek letters that look like Latin ones: a label of these alone is a spoof.
LOOKALIKES = set("аеорсухіјѕԁɡһӏԛԝхуьвнкмтαβεικνορτυχ")


def _codec(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return "utf-8"


def _shown(char: str) -> bool:
    if unicodedata.category(char) in HIDDEN:
        return False
    return not (set(unicodedata.normalize("NFKC", char)) & DELIMITERS)


def _decode_run(run: str, codec: str) -> str:
    """A run of escapes with each whole, visible character of `codec` decoded."""
    data = bytes.fromhex(run.replace("%", ""))
    out, start = [], 0
    while start < len(data):
        for size in range(1, 5):
            piece = data[start:start + size]
            try:
                char = piece.decode(codec)
            except UnicodeDecodeError:
                continue
            if len(char) == 1 and char.encode(codec) == piece and _shown(char):
                out.append(char)
                start += size
                break
        else:
            out.append(f"%{data[start]:02X}")
            start += 1
    return "".join(out)


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    if name.startswith(("CJK", "IDEOGRAPHIC")):
        return "CJK"
    return name.split(" ", 1)[0]


def _label_shown(label: str) -> bool:
    scripts = {_script(char) for char in label if char.isalpha()}
    if len(scripts) > 1 and not any(scripts <= allowed for allowed in MIXABLE):
        return False
    if scripts & {"CYRILLIC", "GREEK"} and set(label) - set("-0123456789") <= LOOKALIKES:
        return False
    return all(_shown(char) for char in label)


def readable_host(host: str) -> str:
    """Each `xn--` label of `host` in Unicode when that cannot mislead (see the module)."""
    labels = []
    for label in host.split("."):
        if label.lower().startswith("xn--"):
            try:
                decoded = idna.decode(label)
            except (idna.IDNAError, UnicodeError, ValueError):
                decoded = label
            labels.append(decoded if decoded != label and _label_shown(decoded) else label)
        else:
            labels.append(label)
    return ".".join(labels)


def readable_url(url: str | None, encoding: str = "utf-8") -> str:
    """`url` as a person reads it: host in Unicode, escaped characters of `encoding` decoded."""
    if not url:
        return url or ""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return ESCAPES.sub(lambda match: _decode_run(match.group(0), _codec(encoding)), url)
    end = len(rest)
    for mark in "/?#":
        if mark in rest:
            end = min(end, rest.index(mark))
    netloc, tail = rest[:end], rest[end:]
    userinfo, at, hostport = netloc.rpartition("@")
    host, colon, port = hostport, "", ""
    if not hostport.startswith("[") and ":" in hostport:
        host, colon, port = hostport.rpartition(":")
    codec = _codec(encoding)
    tail = ESCAPES.sub(lambda match: _decode_run(match.group(0), codec), tail)
    return f"{scheme}://{userinfo}{at}{readable_host(host)}{colon}{port}{tail}"


def init_app(app: Flask) -> None:
    """Templates write `{{ url.loc|readable_url(site.encoding) }}` wherever a person reads it."""
    app.add_template_filter(readable_url, "readable_url")
    app.extensions["readable_url"] = readable_url  # rules name URLs so (errors.ShownUrl)
    app.add_template_filter(changefreq_label, "changefreq_label")


def changefreq_label(value: str | None) -> str:
    """A changefreq as a person reads it (`never（更新しない）`), or – for none."""
    from webapp.sites.setting_fields import CHANGEFREQ_LABELS

    return str(CHANGEFREQ_LABELS.get(value, value)) if value else "–"
