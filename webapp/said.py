"""Messages written now and read later: a worker has no reader to translate for, so it keeps
what it says as the message's English id and its values (JSON), and each reader hears it in
their own language (`render`); the CLI and the API read the English (`english`).

A line is one item or a list of items said one after the other. `make translations` finds
the ids by the keywords `said` and `said_plural`.
"""

from __future__ import annotations

from flask_babel import force_locale, format_number, get_translations

from webapp.errors import quoted, url_reader

Item = dict
Line = Item | list[Item]


def said(msgid: str, **values) -> Item:
    return {"id": msgid, "values": values}


def said_plural(singular: str, plural: str, num: int, **values) -> Item:
    """A message whose words follow `num` (%(num)s in both forms)."""
    return {"id": singular, "plural": plural, "values": {"num": num, **values}}


def verbatim(text: str) -> Item:
    """Words that are not translated (a rule's text already written in English, a URL)."""
    return {"text": text}


def _value(value, numbers: bool):
    if isinstance(value, dict | list):
        return render(value, numbers)
    if numbers and isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    return value


def render(line: Line, numbers: bool = True) -> str:
    """The line in the language of the request at hand (English without one); `numbers`:
    written as the locale writes them (1,234), or as they are (the CLI's and the API's)."""
    if isinstance(line, list):
        return "".join(render(item, numbers) for item in line)
    if "text" in line:
        return line["text"]
    if "url" in line:  # a URL a rule named (errors.ShownUrl): as a person reads it
        reader = url_reader() if numbers else None
        shown = reader(line["url"]) if reader else line["url"]
        return quoted(shown) if line.get("quoted") else shown  # an error's value is quoted
    values = {name: _value(value, numbers) for name, value in line["values"].items()}
    translations, msgid, plural = get_translations(), line["id"], line.get("plural")
    if plural is not None:
        words = translations.ungettext(msgid, plural, line["values"]["num"])
    else:
        words = translations.ugettext(msgid)
    return words % values if values else words


def english(lines: list[Line]) -> str:
    """The lines in English, one a line: what the CLI prints and the API's `message` holds."""
    with force_locale("en"):
        return "\n".join(render(line, numbers=False) for line in lines)
