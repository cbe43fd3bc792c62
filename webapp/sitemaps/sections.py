"""A site's sections: parts of the site (by path prefix, glob or `re:` pattern) published in
files of their own, listed in the site's index beside the files of every other URL.

- The `sections` setting: one `NAME PATTERN` per line. NAME is 1 to 40 lower-case letters,
  digits and '-', starting with a letter; PATTERN is a path prefix (`/blog/`), a glob that
  matches the whole path (`/shop/*/item-*`), or `re:` and a regular expression searched in the
  path, matched as exclusion rules are (`urls.exclusions.first_match`, RE2). The first
  section whose pattern matches a URL's path takes it; a URL no section matches goes to the
  default files.
- Files: section NAME is written to `<stem>-NAME-1.xml`, `<stem>-NAME-2.xml`, ... (`<stem>`
  is the sitemap URL's file name without `.xml`), split at the protocol limits on its own;
  the other URLs to `<stem>-1.xml`, ... A site with sections always publishes an index at its
  sitemap URL. A section's file keeps its name as the section grows.
- Each URL's section is stored and its files written section by section: `sectioned.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from webapp.errors import InvalidValue, rule_text
from webapp.models import Site
from webapp.urls import (
    REGEX,
    check_rule,
    check_together,
    lines_of,
    path_forms,
    rule_matches,
)

MAX_SECTIONS = 50
NAME_LENGTH = 40
_NAME = re.compile(rf"[a-z][a-z0-9-]{{0,{NAME_LENGTH - 1}}}")
# Names the app's own files use: `<stem>-news.xml` is the news sitemap.
RESERVED = ("news",)
_GLOB_CHARS = ("*", "?", "[")


@dataclass(frozen=True)
class Section:
    name: str
    pattern: str  # as written
    rule: str  # the glob or `re:` rule it matches with
    prefix: str | None  # the pattern when it is a path prefix
    # What every path the section takes starts with, in the form it matches: the prefix, or
    # a glob's text before its first wildcard; "" for a `re:` rule (it may match anywhere).
    lead: str = ""

    @classmethod
    def of(cls, name: str, pattern: str) -> Section:
        if pattern.startswith(REGEX):
            return cls(name, pattern, pattern, None)
        if any(c in pattern for c in _GLOB_CHARS):
            wildcard = min(pattern.find(c) for c in _GLOB_CHARS if c in pattern)
            return cls(name, pattern, pattern, None, pattern[:wildcard])
        return cls(name, pattern, pattern + "*", pattern, pattern)


def definitions(text: str | None) -> tuple[Section, ...]:
    """The sections of a stored `sections` setting, in order."""
    found = []
    for line in (text or "").split("\n"):
        name, pattern = _split(line)
        if name:
            found.append(Section.of(name, pattern))
    return tuple(found)


def _split(line: str) -> tuple[str, str]:
    """NAME and PATTERN of a line: separated by the first spaces or tabs."""
    parts = line.strip().split(None, 1)
    return (parts[0], parts[1].strip()) if len(parts) == 2 else (line.strip(), "")


def parse_sections(value: str | list[str]) -> str | None:
    """The `sections` setting: `NAME PATTERN` per line (a list item each, from the API);
    blank lines skipped. Stored as `NAME PATTERN` lines, None for none. Each bad line is
    refused with its number and the rule it breaks."""
    lines = [(n, line.strip()) for n, line in enumerate(lines_of(value), start=1)
             if line.strip()]
    if len(lines) > MAX_SECTIONS:
        raise InvalidValue("sections", f"{len(lines)} sections", rule_text(
            "a site may have at most %(limit)s sections", limit=MAX_SECTIONS))
    sections: list[Section] = []
    for n, line in lines:
        sections.append(_check_line(n, line, sections))
    if sections:
        check_together(tuple(section.rule for section in sections), field="sections")
    return "\n".join(f"{s.name} {s.pattern}" for s in sections) or None


def _check_line(n: int, line: str, earlier: list[Section]) -> Section:
    def refuse(said) -> InvalidValue:
        return InvalidValue("sections", line, rule_text("line %(line)s: %(rule)s", line=n,
                                                        rule=said))

    name, pattern = _split(line)
    if not pattern:
        raise refuse(rule_text("write a name, a space and a pattern, e.g. blog /blog/"))
    if not _NAME.fullmatch(name) or name.endswith("-"):
        raise refuse(rule_text(
            "the name %(name)s must be 1 to %(limit)s lower-case letters, digits or '-', "
            "starting with a letter and not ending with '-'", name=repr(name),
            limit=NAME_LENGTH))
    if name in RESERVED:
        raise refuse(rule_text("the name %(name)s is used by the app's own files; choose "
                               "another", name=repr(name)))
    for other in earlier:
        if other.name == name:
            raise refuse(rule_text("the name %(name)s is already used by another section; "
                                   "each section needs a name of its own", name=repr(name)))
    section = Section.of(name, pattern)
    if not section.pattern.startswith((REGEX, "/", "*")):
        raise refuse(rule_text(
            "the pattern must be a path prefix starting with / (e.g. /blog/), a glob (e.g. "
            "/shop/*/item-*) or re: and a regular expression"))
    check_rule(section.rule, field="sections", line=n)
    if any(other.rule == section.rule for other in earlier):
        raise refuse(rule_text("the pattern %(pattern)s is already another section's: the "
                               "first section matching a URL takes it, so this one would "
                               "stay empty", pattern=pattern))
    return section


def check_names(text: str | None, stem: str) -> None:
    """A section may not be called as the site's files are (`stem`: the sitemap URL's file
    name without .xml, e.g. sitemap)."""
    for n, section in enumerate(definitions(text), start=1):
        if section.name == stem:
            raise InvalidValue("sections", f"{section.name} {section.pattern}", rule_text(
                "line %(line)s: %(rule)s", line=n, rule=rule_text(
                    "the name %(name)s is the file name of the site's sitemap; choose another",
                    name=repr(section.name))))


def section_of(sections: tuple[Section, ...], loc: str, encoding: str = "utf-8") -> str:
    """The name of the first section matching `loc`, "" when none does. A prefix is
    compared as text (a glob of it, `/blog/*`, means the same and takes RE2 far
    longer); globs and `re:` rules are matched as exclusion rules are, a glob only for a path
    that starts with its lead (RE2 costs some microseconds a path, and most paths are some
    other section's)."""
    path, decoded = path_forms(loc, encoding)
    for section in sections:
        lead = section.lead
        if lead and not (path.startswith(lead) or decoded.startswith(lead)):
            continue
        if section.prefix is not None or rule_matches(section.rule, path, decoded):
            return section.name
    return ""


def file_stem(stem: str, name: str) -> str:
    """The stem of a section's files: `<stem>-NAME`, or the site's own for the default."""
    return f"{stem}-{name}" if name else stem


def groups(site: Site) -> list[str]:
    """The names of the site's groups of files in index order: its sections, then ""."""
    return [section.name for section in definitions(site.sections)] + [""]


def group_of(name: str, stem: str, names: list[str]) -> tuple[str, int] | None:
    """(section, number) of a urlset file called `name`, None when it is no group's file."""
    for section in names:
        match = re.fullmatch(re.escape(file_stem(stem, section)) + r"-(\d+)\.xml", name)
        if match:
            return section, int(match.group(1))
    return None


def file_sections(site: Site, files: list) -> list[tuple[str | None, list]]:
    """A generation's files grouped by the site's sections as defined now, in index order:
    (section name, "" for the other URLs, None for files of no group, e.g. the index)."""
    stem = site.sitemap_url.rsplit("/", 1)[-1].removesuffix(".xml")
    names = groups(site)
    grouped: dict[str | None, list[tuple[int, object]]] = {}
    for file in files:
        found = group_of(file.name, stem, names) if file.kind == "urlset" else None
        key, number = (found if found else (None, 0))
        grouped.setdefault(key, []).append((number, file))
    order = [*names, None]
    return [(key, [f for _, f in sorted(grouped[key], key=lambda pair: pair[0])])
            for key in order if key in grouped]
