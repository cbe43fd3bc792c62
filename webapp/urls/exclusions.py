"""A site's exclusion rules: which URLs never enter it (`exclude`) and which query parameters
are taken off every URL that does (`strip_params`).

- `exclude`: one rule per line, matched against a URL's path from the host's root, without the
  query (`/tmp/a.html`), as stored (percent-encoded) and as decoded in the site's encoding. A
  rule is a glob (`*` any characters, `/` included; `?` one character; `[abc]` one of them)
  that must match the whole path, or `re:` and a regular expression searched in the path.
  Regular expressions are run by RE2 (Python's syntax without backreferences or look-around),
  whose time is linear in the path's length, times the size of the compiled program at worst:
  `re:(a|aa){0,1000}$` (6,004 instructions) took 0.3 s for a path of 2,000 characters. So
  rules are capped in number and length, and in program size, each and together (`check_rule`,
  `check_together`); what they may cost a web request is capped in rule_cost.
- `strip_params`: a comma list of globs (`utm_*`, `gclid`); query parameters whose names match
  one (ASCII case ignored) are removed, the others kept in their order.

Every input path applies them where it normalises a loc (`Rules.apply`): a stripped parameter
is a Note, as a removed fragment is; an excluded URL raises `Excluded`, an InvalidValue that
names the rule, so each path refuses and counts it rather than dropping it. URLs stored before
a rule was added stay until deleted (`matching_stored` counts them).

Imports nothing of the database layer: a large import's worker process checks rows with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from urllib.parse import unquote, urlsplit, urlunsplit

import re2

from webapp.errors import InvalidValue, Note, RuleText, rule_text

MAX_RULES = 100
MAX_RULE_LENGTH = 300
# RE2 instructions (`programsize`): a path is searched in time up to its length times these.
# Globs compile to about 10 each (a hundred of them to 1,021 together), a regular expression
# of ordinary use to 5 to 40; repeats of alternatives multiply.
MAX_RULE_PROGRAM = 500
MAX_RULES_PROGRAM = 2_000
MAX_PARAMS = 50
MAX_PARAM_LENGTH = 100
REGEX = "re:"
_PARAM_GLOB = re.compile(r"[A-Za-z0-9_.\-*?\[\]!~:]+")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is told to the person, not logged to stderr


class Excluded(InvalidValue):
    """A URL one of the site's `exclude` rules refuses; `pattern` is that rule as written."""

    def __init__(self, field: str, url: str, pattern: str):
        super().__init__(field, url, f"is excluded by the site's rule `{pattern}`")
        self.pattern = pattern


def _glob_regex(glob: str) -> str:
    """A glob as an RE2 pattern matching a whole path."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[" and "]" in glob[i + 2:]:
            end = glob.index("]", i + 2)
            inner = glob[i + 1:end]
            negate = inner.startswith("!")
            body = re.sub(r"([\\\]^\[])", r"\\\1", inner[1:] if negate else inner)
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "(?s)^" + "".join(out) + "$"


@lru_cache(maxsize=512)
def compile_rule(rule: str):
    """The compiled matcher of one rule (a glob, or `re:` and a regular expression); re2.error
    when the expression is not valid."""
    return re2.compile(_pattern(rule), _OPTIONS)


def _pattern(rule: str) -> str:
    return rule[len(REGEX):] if rule.startswith(REGEX) else _glob_regex(rule)


@lru_cache(maxsize=256)
def _any_rule(rules: tuple[str, ...]):
    """One matcher for all the rules: most paths match none, and are passed with one search."""
    return re2.compile("|".join(f"(?:{_pattern(rule)})" for rule in rules), _OPTIONS)


def check_rule(rule: str, field: str = "exclude", line: int | None = None) -> str:
    """One rule as written, or InvalidValue naming the line and what is wrong."""
    def where(said: RuleText) -> RuleText:
        return rule_text("line %(line)s: %(rule)s", line=line, rule=said) if line else said

    if len(rule) > MAX_RULE_LENGTH:
        raise InvalidValue(field, rule, where(rule_text(
            "a rule may be at most %(limit)s characters", limit=MAX_RULE_LENGTH)))
    if rule.startswith(REGEX):
        if not rule[len(REGEX):].strip():
            raise InvalidValue(field, rule, where(rule_text(
                "re: needs a regular expression after it")))
    elif not rule.startswith(("/", "*")):
        raise InvalidValue(field, rule, where(rule_text(
            "a glob is matched against the URL's path, so it starts with / or * (e.g. /tmp/*); "
            "write re: before a regular expression")))
    try:
        size = compile_rule(rule).programsize
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidValue(field, rule, where(rule_text(
            "is not a valid regular expression (%(reason)s); the syntax is Python's without "
            "backreferences or look-around (RE2)", reason=str(reason)))) from None
    if size > MAX_RULE_PROGRAM:
        raise InvalidValue(field, rule, where(too_costly(size)))
    return rule


def too_costly(size: int) -> RuleText:
    """Why a rule whose RE2 program has `size` instructions is refused."""
    return rule_text(
        "is too costly to run: RE2 compiles it to %(size)s instructions, and a rule may have "
        "at most %(limit)s, since every URL's path is searched with each of them; repeat "
        "less, e.g. [a-z]+ rather than (a|aa){0,1000}", size=size, limit=MAX_RULE_PROGRAM)


def lines_of(value: str | list[str]) -> list[str]:
    """The lines of a setting given one per line: a list (the API's, one per item) or text,
    where `\\n` stands for a line break when it is typed on one line."""
    if isinstance(value, list):
        return [line for item in value for line in str(item).replace("\r\n", "\n").split("\n")]
    text = str(value).replace("\r\n", "\n")
    text = re.sub(r"\\(\\|n)", lambda m: "\n" if m.group(1) == "n" else "\\", text)
    return text.split("\n")


def parse_exclude(value: str | list[str]) -> str | None:
    """The `exclude` setting: one rule per line (`\\n` stands for a line break on one line);
    blank lines are skipped. Stored as the rules joined by line breaks, None for none."""
    rules = [(n, line.strip()) for n, line in enumerate(lines_of(value), start=1)
             if line.strip()]
    if len(rules) > MAX_RULES:
        raise InvalidValue("exclude", f"{len(rules)} rules", rule_text(
            "a site may have at most %(limit)s exclusion rules", limit=MAX_RULES))
    checked = tuple(check_rule(rule, line=n) for n, rule in rules)
    if checked:
        check_together(checked)
    return "\n".join(checked) or None


def check_together(rules: tuple[str, ...], field: str = "exclude") -> None:
    """Rules that each compile may be too large for RE2, or too costly, once joined into the
    one matcher every URL is checked with (`_any_rule`): refused here, naming the rule that
    tips it over, so that no write of a URL ever meets them."""
    if program_size(rules) is None:
        tipping = next(rule for count, rule in enumerate(rules, start=1)
                       if program_size(rules[:count]) is None)
        raise InvalidValue(field, tipping, rule_text(
            "together the rules are too large: RE2 cannot run them at once from this rule "
            "on; use fewer rules or shorter repeats (such as .{1000})")) from None
    if program_size(rules) > MAX_RULES_PROGRAM:
        count, size = next((count, size) for count in range(1, len(rules) + 1)
                           if (size := program_size(rules[:count])) > MAX_RULES_PROGRAM)
        raise InvalidValue(field, rules[count - 1], rule_text(
            "together the rules are too costly to run from this rule on: RE2 compiles them to "
            "%(size)s instructions, and a site's rules may have at most %(limit)s together, "
            "since every URL's path is searched with each of them; use fewer rules or repeat "
            "less", size=size, limit=MAX_RULES_PROGRAM))


def program_size(rules: tuple[str, ...]) -> int | None:
    """The size of the rules' one matcher, 0 for none; None when RE2 cannot build it."""
    if not rules:
        return 0
    try:
        return _any_rule(rules).programsize
    except re2.error:
        return None


def show_exclude(value: str | None) -> str:
    """The rules on one line, as `sites set` takes them back."""
    return (value or "").replace("\\", "\\\\").replace("\n", "\\n")


def parse_strip_params(value: str | list[str]) -> str | None:
    """The `strip_params` setting: a comma list of parameter-name globs, None for none."""
    items = value if isinstance(value, list) else str(value).split(",")
    globs = [str(item).strip() for item in items if str(item).strip()]
    if len(globs) > MAX_PARAMS:
        raise InvalidValue("strip_params", f"{len(globs)} names", rule_text(
            "at most %(limit)s parameter names", limit=MAX_PARAMS))
    for glob in globs:
        if len(glob) > MAX_PARAM_LENGTH or not _PARAM_GLOB.fullmatch(glob):
            raise InvalidValue("strip_params", glob, rule_text(
                "must be query parameter names or globs such as utm_* (letters, digits, _ . - "
                "and * ? [ ]), separated by commas, each at most %(limit)s characters",
                limit=MAX_PARAM_LENGTH))
    return ",".join(dict.fromkeys(globs)) or None


def _path(url: str) -> str:
    """The path of a normalised URL (scheme://host/path?query, no fragment); faster than
    urlsplit, which took most of the time of checking a site's stored URLs."""
    rest = url.partition("://")[2]
    start = rest.find("/")
    return rest[start:].partition("?")[0] if start >= 0 else "/"


def first_match(rules: tuple[str, ...], url: str, encoding: str = "utf-8") -> str | None:
    """The first of `rules` (globs or `re:` patterns, checked with `check_rule` and together)
    that matches this normalised URL's path, as stored or decoded in `encoding`; None."""
    if not rules:
        return None
    path, decoded = path_forms(url, encoding)
    if not _searches(_any_rule(rules), path, decoded):
        return None
    return next((rule for rule in rules if rule_matches(rule, path, decoded)), None)


def path_forms(url: str, encoding: str = "utf-8") -> tuple[str, str]:
    """The path a rule is matched against: as stored, and decoded in `encoding`."""
    path = _path(url)
    return path, unquote(path, encoding=encoding, errors="replace") if "%" in path else path


def rule_matches(rule: str, path: str, decoded: str) -> bool:
    """Whether one rule matches a path in either of its forms (`path_forms`)."""
    return _searches(compile_rule(rule), path, decoded)


def _searches(matcher, path: str, decoded: str) -> bool:
    # Searched as UTF-8 bytes, which RE2 matches anyway: given a str, the wrapper also maps
    # the match's byte offsets back to characters, which took half of each search's time.
    return bool(matcher.search(path.encode())
                or (decoded != path and matcher.search(decoded.encode())))


@dataclass(frozen=True)
class Rules:
    """A site's rules in a form a worker process can be handed (plain text, compiled there)."""

    exclude: tuple[str, ...] = ()
    strip_params: tuple[str, ...] = ()
    encoding: str = "utf-8"

    @classmethod
    def of(cls, site) -> Rules:
        """The rules of a site (anything with `exclude`, `strip_params` and `encoding`)."""
        return cls(tuple(filter(None, (site.exclude or "").split("\n"))),
                   tuple(filter(None, (site.strip_params or "").split(","))),
                   site.encoding or "utf-8")

    def __bool__(self) -> bool:
        return bool(self.exclude or self.strip_params)

    def excluding(self, url: str) -> str | None:
        """The first rule that excludes this normalised URL, or None."""
        return first_match(self.exclude, url, self.encoding)

    def strip(self, url: str) -> tuple[str, list[str]]:
        """The URL without the query parameters `strip_params` names, and the names removed."""
        if not self.strip_params or "?" not in url:
            return url, []
        parts = urlsplit(url)
        kept, removed = [], []
        for pair in parts.query.split("&"):
            name = unquote(pair.partition("=")[0], encoding=self.encoding, errors="replace")
            if pair and any(fnmatchcase(name.lower(), glob.lower()) for glob in self.strip_params):
                removed.append(name)
            else:
                kept.append(pair)
        if not removed:
            return url, []
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(kept), "")), removed

    def apply(self, url: str, field: str = "loc") -> tuple[str, Note | None]:
        """A normalised loc with the parameters stripped (and a note saying which), or
        Excluded when a rule refuses it."""
        stripped, removed = self.strip(url)
        rule = self.excluding(stripped)
        if rule is not None:
            raise Excluded(field, stripped, rule)
        if not removed:
            return stripped, None
        names = ", ".join(dict.fromkeys(removed))
        return stripped, Note(field, url, rule_text(
            "the query parameters %(names)s were removed by the site's strip_params setting: "
            "tracking parameters make copies of one page", names=names))
