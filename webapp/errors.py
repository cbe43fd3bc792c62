"""The errors domain functions raise for bad input; views and commands turn them into messages.

A rule is a `rule_text` (or a lazy string, `flask_babel.lazy_gettext`): `str(error)` says it in
the language of the request at hand (English in the CLI and workers), while `error.rule` is
always English, as the API's `rule` and anything that compares rules need it.
"""

from __future__ import annotations

import sys

# Flask-Babel is imported where a lazy string is made or read, not here: the process that
# checks CSV rows imports this module and starts without Flask (tests/test_architecture.py).


class RuleText:
    """A rule's words as their English message id and named values, translated when read:
    `str()` in the language of the request or app at hand, English where there is none (the
    CLI, workers, the process that checks CSV rows, which never loads Flask). A value that is
    itself a RuleText is read in the same language."""

    def __init__(self, msgid: str, values: dict[str, object]):
        self.msgid, self.values = msgid, values

    def _render(self, gettext, shown=None) -> str:
        values = {name: value._render(gettext, shown) if isinstance(value, RuleText)
                  else shown(value) if shown and isinstance(value, ShownUrl) else value
                  for name, value in self.values.items()}
        words = gettext(self.msgid)
        return words % values if values else words

    def english(self) -> str:
        return self._render(lambda msgid: msgid)

    def __str__(self) -> str:
        return self._render(_current_gettext(), url_reader())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RuleText):
            return (self.msgid, self.values) == (other.msgid, other.values)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.msgid)

    def __repr__(self) -> str:
        return f"rule_text({self.msgid!r}, **{self.values!r})"


def rule_text(msgid: str, **values: object) -> RuleText:
    """A rule said with one message id and named placeholders (`make translations` finds it by
    the keyword `rule_text`): rule_text("must be at most %(limit)s characters", limit=200)."""
    return RuleText(msgid, values)


class ShownUrl(str):
    """A URL a rule names (a site's base URL), or the value of an error that is a URL as the
    app stored it: a person reads it as the app shows URLs, its host in Unicode rather than
    `xn--` (the reader the app keeps as `extensions["readable_url"]`, views.display); the CLI
    and the API (programs read it) keep it as it is stored."""


def url_reader():
    """How a URL is shown to the person a request is answered for; None outside a request
    (the CLI, a worker), in a request for a program (`urls_as_stored`: the API) or when the
    app registered no reader: they keep the stored form."""
    if "flask" not in sys.modules:
        return None
    from flask import current_app, g, has_request_context

    if not has_request_context() or g.get("urls_as_stored"):
        return None
    return current_app.extensions.get("readable_url")


def urls_as_stored() -> None:
    """This request answers a program: rules name URLs as stored (url_reader)."""
    from flask import g

    g.urls_as_stored = True


def _current_gettext():
    """The translating function of the app at hand, or English when Flask-Babel is not loaded
    (then no app can be at hand: this never imports it) or no app context is active."""
    if "flask_babel" not in sys.modules:
        return lambda msgid: msgid
    from flask import has_app_context
    from flask_babel import get_translations

    if not has_app_context():
        return lambda msgid: msgid
    return get_translations().ugettext


def in_english(text: object) -> str:
    """A message or rule as the CLI and the API's machine-read fields give it: English,
    whatever the request's language (a lazy string is rendered under the English locale)."""
    if isinstance(text, str):
        return text
    if isinstance(text, RuleText):
        return text.english()
    from flask_babel import force_locale

    with force_locale("en"):
        return str(text)


def said_of(text: object) -> dict:
    """A rule or message as an item of webapp.said (its message id and values, JSON that a
    reader later hears in their own language), without loading Flask: the process that checks
    CSV rows stores its reasons this way. Text that has no message id is kept as it is."""
    if isinstance(text, RuleText):
        return {"id": text.msgid, "values": {
            name: said_of(value) if isinstance(value, RuleText)
            else {"url": str(value)} if isinstance(value, ShownUrl) else value
            for name, value in text.values.items()}}
    func = getattr(text, "_func", None)  # flask_babel's LazyString of lazy_gettext(msgid, ...)
    if getattr(func, "__name__", "") == "gettext" and len(getattr(text, "_args", ())) == 1:
        return {"id": text._args[0], "values": dict(text._kwargs)}
    return {"text": str(text)}


def quoted(value: object, reader=None) -> str:
    """A value as an error names it: quoted, cut at 80 characters; a ShownUrl as `reader`
    shows it (None: as stored)."""
    text = value if isinstance(value, str) else str(value)
    if reader is not None and isinstance(value, ShownUrl):
        text = reader(text)
    return repr(text if len(text) <= 80 else f"{text[:77]}...")


def _value_item(field: str, value: object) -> list[dict]:
    """`field 'value': ` as webapp.said items: a ShownUrl as a URL item, read as its reader
    reads it."""
    if isinstance(value, ShownUrl):
        return [{"text": f"{field} "}, {"url": str(value), "quoted": True}, {"text": ": "}]
    return [{"text": f"{field} {quoted(value)}: "}]


class InvalidValue(ValueError):
    """A value breaks a rule; the message names the field, the value and the rule."""

    def __init__(self, field: str, value: object, rule: object):
        self.field, self.value, self.said = field, value, rule
        super().__init__(field, value, rule)

    @property
    def rule(self) -> str:
        """The rule in English (the API's `rule`)."""
        return in_english(self.said)

    def __str__(self) -> str:
        return f"{self.field} {quoted(self.value, url_reader())}: {self.said}"

    def said_line(self) -> list[dict]:
        """The error as webapp.said items: the field and value as they are (a URL as its
        reader reads it), the rule in the reader's language."""
        return [*_value_item(self.field, self.value), said_of(self.said)]


class InvalidValues(InvalidValue):
    """Several values break their rules at once: `errors` holds each, so that a form or an API
    answer names every field at once. As an InvalidValue it is the first of them."""

    def __init__(self, errors: list[InvalidValue]):
        first = errors[0]
        super().__init__(first.field, first.value, first.said)
        self.errors = errors

    def __str__(self) -> str:
        return "; ".join(str(error) for error in self.errors)

    def said_line(self) -> list[dict]:
        line: list[dict] = []
        for error in self.errors:
            line += ([{"text": "; "}] if line else []) + error.said_line()
        return line


def each_error(exc: InvalidValue) -> list[InvalidValue]:
    """Every error an InvalidValue carries: itself, or each of an InvalidValues."""
    return list(exc.errors) if isinstance(exc, InvalidValues) else [exc]


def collect(errors: list[InvalidValue], rule, *args, **kwargs):
    """rule(*args, **kwargs), or None with its InvalidValue added to `errors`: so that every
    field is checked and every error named at once (raise_all)."""
    try:
        return rule(*args, **kwargs)
    except InvalidValue as exc:
        errors.append(exc)
        return None


def raise_all(errors: list[InvalidValue]) -> None:
    """Raise the one error as it is, several as InvalidValues; nothing when there are none."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InvalidValues([error for exc in errors for error in each_error(exc)])


class Note:
    """Something a rule changed in a value that the person should hear of (a fragment removed):
    kept, unlike an InvalidValue, and named in the answer or report. `text` is a rule_text,
    read in the language at hand (`str`), or English (`english`)."""

    def __init__(self, field: str, value: str, text: object):
        self.field, self.value, self.text = field, value, text

    def __str__(self) -> str:
        return f"{self.field} {quoted(self.value, url_reader())}: {self.text}"

    def english(self) -> str:
        return f"{self.field} {quoted(self.value)}: {in_english(self.text)}"

    def said_line(self) -> list[dict]:
        return [*_value_item(self.field, self.value), said_of(self.text)]

    def __repr__(self) -> str:
        return f"Note({self.field!r}, {self.value!r}, {self.text!r})"


class Conflict(InvalidValue):
    """A value that is fine by itself clashes with what is stored (a name already taken)."""


class NotAllowed(InvalidValue):
    """A value this person or token may not set, however valid (an operator's setting)."""


class NotFound(LookupError):
    """The thing asked for does not exist."""


def unstorable(text: str):
    """Why no text column can hold `text`, or None when one can. JSON may carry NUL and lone
    UTF-16 surrogates (`"\\u0000"`, `"\\ud800"`), a command line bytes that are not UTF-8
    (which Python turns into surrogates); PostgreSQL refuses NUL, and UTF-8 has no surrogates."""
    if "\0" in text:
        from flask_babel import lazy_gettext as _l

        return _l("must not contain the NUL character (\\u0000)")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            from flask_babel import lazy_gettext as _l

            return _l("must be Unicode text: it has a lone surrogate (\\ud800 to \\udfff) "
                      "or bytes that are not UTF-8")
    return None


def check_storable(field: str, text: str) -> str:
    rule = unstorable(text)
    if rule:
        shown = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text[:40])
        raise InvalidValue(field, shown, rule)
    return text
