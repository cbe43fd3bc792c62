"""The errors domain functions raise for bad input; views and commands turn them into messages."""

from __future__ import annotations


class InvalidValue(ValueError):
    """A value breaks a rule; the message names the field, the value and the rule."""

    def __init__(self, field: str, value: object, rule: str):
        self.field, self.value, self.rule = field, value, rule
        text = value if isinstance(value, str) else str(value)
        shown = text if len(text) <= 80 else f"{text[:77]}..."
        super().__init__(f"{field} {shown!r}: {rule}")


class Conflict(InvalidValue):
    """A value that is fine by itself clashes with what is stored (a name already taken)."""


class NotAllowed(InvalidValue):
    """A value this person or token may not set, however valid (an operator's setting)."""


class NotFound(LookupError):
    """The thing asked for does not exist."""


def unstorable(text: str) -> str | None:
    """Why no text column can hold `text`, or None when one can. JSON may carry NUL and lone
    UTF-16 surrogates (`"\\u0000"`, `"\\ud800"`), a command line bytes that are not UTF-8
    (which Python turns into surrogates); PostgreSQL refuses NUL, and UTF-8 has no surrogates."""
    if "\0" in text:
        return "must not contain the NUL character (\\u0000)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return ("must be Unicode text: it has a lone surrogate (\\ud800 to \\udfff) or "
                    "bytes that are not UTF-8")
    return None


def check_storable(field: str, text: str) -> str:
    rule = unstorable(text)
    if rule:
        shown = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text[:40])
        raise InvalidValue(field, shown, rule)
    return text
