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


class NotFound(LookupError):
    """The thing asked for does not exist."""
