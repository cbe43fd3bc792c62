"""The site settings of verification, each read from text by a check that names its rule:
`lastmod_source`, `leave_out`, `verify_schedule`, `user_agent`, `verify_ignore`."""

from __future__ import annotations

import logging

import re2

from webapp.errors import InvalidValue, rule_text
from webapp.outbound import USER_AGENT
from webapp.schedules import check_schedule

LASTMOD_SOURCES = ("given", "content", "newest")
LEAVE_OUT_CHOICES = ("broken", "redirected", "noindex", "canonical", "blocked")
# Google reports a listed URL that robots.txt blocks ("Submitted URL blocked by robots.txt")
# as it does a broken one: both are left out unless the site says otherwise.
DEFAULT_LEAVE_OUT = "broken,noindex,canonical,blocked"
# Who is asking, and where to read about it, as crawlers name themselves.
DEFAULT_USER_AGENT = USER_AGENT.split(" ", 1)[0] + " (sitemap verifier; self-hosted)"
log = logging.getLogger(__name__)
MAX_IGNORE_PATTERNS = 50
MAX_IGNORE_LENGTH = 300
# RE2 runs in time linear in the text, times the size of the compiled program when its DFA
# gives up: `(a|aa){0,1000}` (6,004 instructions) took 20 s on 200,000 characters, and a
# verification of a 1 MB page 109 s; `(a|aa){0,82}` (496) 20 ms. As for exclusion rules, a
# pattern may compile to at most 500 instructions and a site's patterns to 2,000 together, so
# the page of at most 2 MiB a check reads costs well under a second whatever the patterns.
MAX_IGNORE_PROGRAM = 500
MAX_IGNORE_PROGRAM_TOGETHER = 2_000
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is told to the person, not logged to stderr


def check_lastmod_source(value: str) -> str:
    text = str(value).strip().lower()
    if text not in LASTMOD_SOURCES:
        raise InvalidValue("lastmod_source", value, rule_text(
            "must be one of %(choices)s", choices=", ".join(LASTMOD_SOURCES)))
    return text


def check_leave_out(value: str) -> str:
    """A comma list of outcomes, tidied (each once, in a fixed order); empty keeps every URL."""
    names = [name.strip().lower() for name in str(value).split(",") if name.strip()]
    unknown = [name for name in names if name not in LEAVE_OUT_CHOICES]
    if unknown:
        raise InvalidValue("leave_out", value, rule_text(
            "must be a comma list of %(choices)s (or empty); %(name)s is not one",
            choices=", ".join(LEAVE_OUT_CHOICES), name=repr(unknown[0])))
    return ",".join(name for name in LEAVE_OUT_CHOICES if name in names)


def check_verify_schedule(value: str) -> str:
    try:
        return check_schedule(value)
    except InvalidValue as exc:
        raise InvalidValue("verify_schedule", value, exc.said) from None


def check_user_agent(value: str) -> str | None:
    """Printable ASCII (a header value), at most 300 characters; empty means the default."""
    text = str(value).strip()
    if not text:
        return None
    if len(text) > 300 or not all(" " <= character <= "~" for character in text):
        raise InvalidValue("user_agent", value[:40], rule_text(
            "must be at most 300 printable ASCII characters, or empty for the default"))
    return text


def check_verify_ignore(value: str) -> str | None:
    """Regular expressions, one a line (`\\n` between them on one line), removed from a
    page's text before it is fingerprinted. They run on text the live site controls, so RE2
    runs them (time linear in the text: no pattern can hang a verifier) and they are capped in
    number and length."""
    text = str(value).replace("\r\n", "\n").replace("\\n", "\n")
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) > MAX_IGNORE_PATTERNS:
        raise InvalidValue("verify_ignore", value[:40],
                           rule_text("must be at most %(n)d patterns", n=MAX_IGNORE_PATTERNS))
    together = 0
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_IGNORE_LENGTH:
            raise InvalidValue("verify_ignore", line, rule_text(
                "line %(line)d: a pattern may be at most %(n)d characters",
                line=number, n=MAX_IGNORE_LENGTH))
        try:
            size = re2.compile(line, _OPTIONS).programsize
        except re2.error as exc:
            reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) \
                else str(exc)
            raise InvalidValue("verify_ignore", line, rule_text(
                "must be regular expressions, one a line; line %(line)d is not "
                "(%(reason)s); the syntax is Python's without backreferences or look-around "
                "(RE2)", line=number, reason=reason)) from None
        if size > MAX_IGNORE_PROGRAM:
            raise InvalidValue("verify_ignore", line, rule_text(
                "line %(line)d is too costly to run: RE2 compiles it to %(size)s "
                "instructions, and a pattern may have at most %(limit)s, since every page's "
                "text is searched with it; repeat less, e.g. [a-z]+ rather than (a|aa){0,1000}",
                line=number, size=size, limit=MAX_IGNORE_PROGRAM))
        together += size
        if together > MAX_IGNORE_PROGRAM_TOGETHER:
            raise InvalidValue("verify_ignore", line, rule_text(
                "together the patterns are too costly to run from line %(line)d on: RE2 "
                "compiles them to %(size)s instructions, and a site's patterns may have at most "
                "%(limit)s together, since every page's text is searched with each of them",
                line=number, size=together, limit=MAX_IGNORE_PROGRAM_TOGETHER))
    return "\n".join(lines) or None


def show_verify_ignore(value: str | None) -> str:
    return (value or "").replace("\n", "\\n")


def user_agent_of(value: str | None) -> str:
    return value or DEFAULT_USER_AGENT


def ignore_patterns(value: str | None) -> list[re2._Regexp]:
    """The patterns, compiled by RE2 (never Python's `re`: the text is the live site's). One
    stored before these checks that RE2 cannot compile, or past the caps on their cost, is
    left out and logged: run, it would hold a verification for minutes a page."""
    patterns, together = [], 0
    for line in filter(None, (value or "").split("\n")):
        try:
            pattern = re2.compile(line, _OPTIONS)
        except re2.error:
            log.warning("verify_ignore pattern %r left out: RE2 cannot compile it", line)
            continue
        if pattern.programsize > MAX_IGNORE_PROGRAM \
                or together + pattern.programsize > MAX_IGNORE_PROGRAM_TOGETHER:
            log.warning("verify_ignore pattern %r left out: too costly to run (%s RE2 "
                        "instructions)", line, pattern.programsize)
            continue
        together += pattern.programsize
        patterns.append(pattern)
    return patterns


def left_out(value: str | None) -> tuple[str, ...]:
    return tuple(name for name in (value or "").split(",") if name)


# Each setting: how to read it from text, and how to show it as text (as sites.SETTINGS).
SETTINGS = {
    "lastmod_source": (check_lastmod_source, str),
    "leave_out": (check_leave_out, str),
    "verify_schedule": (check_verify_schedule, str),
    "user_agent": (check_user_agent, lambda value: value or ""),
    "verify_ignore": (check_verify_ignore, show_verify_ignore),
}
