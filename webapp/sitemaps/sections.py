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
- Each URL's section is stored (`urls.section`, "" for none) so that a section is read with
  one indexed query; `assign` computes it for URLs new since the last run, and for every URL
  when the definition changed (`sites.sections_assigned` remembers which one the column
  holds). A URL's loc never changes, so its section changes only with the definition.
- Incremental runs plan per section: the files of the last set are grouped by section, and a
  changed URL dirties only the file of its own section that holds its id.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.errors import InvalidValue, rule_text
from webapp.models import GenerationFile, Site, Url
from webapp.sitemaps import incremental
from webapp.sitemaps.build import BuiltFile, Limits, UrlsetWriter, check_index_size
from webapp.urls.exclusions import REGEX, check_rule, check_together, first_match, lines_of

MAX_SECTIONS = 50
NAME_LENGTH = 40
_NAME = re.compile(rf"[a-z][a-z0-9-]{{0,{NAME_LENGTH - 1}}}")
# Names the app's own files use: `<stem>-news.xml` is the news sitemap.
RESERVED = ("news",)
_GLOB_CHARS = ("*", "?", "[")
ASSIGN_BATCH = 10_000


@dataclass(frozen=True)
class Section:
    name: str
    pattern: str  # as written
    rule: str  # the glob or `re:` rule it matches with

    @classmethod
    def of(cls, name: str, pattern: str) -> Section:
        prefix = not pattern.startswith(REGEX) and not any(c in pattern for c in _GLOB_CHARS)
        return cls(name, pattern, pattern + "*" if prefix else pattern)


def definitions(text: str | None) -> tuple[Section, ...]:
    """The sections of a stored `sections` setting, in order."""
    found = []
    for line in (text or "").split("\n"):
        name, _, pattern = line.strip().partition(" ")
        if name:
            found.append(Section.of(name, pattern.strip()))
    return tuple(found)


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

    name, _, pattern = line.partition(" ")
    name, pattern = name.strip(), pattern.strip()
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
    """The name of the first section matching `loc`, "" when none does."""
    rule = first_match(tuple(s.rule for s in sections), loc, encoding)
    return "" if rule is None else next(s.name for s in sections if s.rule == rule)


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


# Assigning each URL its section ------------------------------------------------------------


def assign(session: Session, site: Site, upto_seq: int | None = None) -> bool:
    """Store the section of each URL of the site that needs one: every URL when the
    definition changed since the column was computed, else those without one (new URLs, and
    with `upto_seq` only those changed at or before it). True when anything was written."""
    sections = definitions(site.sections)
    if not sections:
        if site.sections_assigned is None:
            return False
        site.sections_assigned = None  # the column is recomputed when sections come back
        return True
    everything = site.sections_assigned != site.sections
    wrote = False
    if everything:
        # Deleted URLs are in no file: they get a section again if they come back.
        wrote = bool(session.execute(update(Url).where(
            Url.site_id == site.id, Url.deleted_at.is_not(None), Url.section.is_not(None))
            .values(section=None).execution_options(synchronize_session=False)).rowcount)
        conditions = [Url.site_id == site.id, Url.deleted_at.is_(None)]
    else:
        conditions = [Url.site_id == site.id, Url.section.is_(None)]
        if upto_seq is not None:
            conditions.append(Url.change_seq <= upto_seq)
    after = 0
    while True:  # in batches by id: memory stays bounded, and no cursor is read while updating
        rows = session.execute(select(Url.id, Url.loc, Url.section).where(
            *conditions, Url.id > after).order_by(Url.id).limit(ASSIGN_BATCH)).all()
        if not rows:
            break
        after = rows[-1][0]
        moved: dict[str, list[int]] = {}
        for url_id, loc, before in rows:
            name = section_of(sections, loc, site.encoding or "utf-8")
            if name != before:
                moved.setdefault(name, []).append(url_id)
        for name, ids in moved.items():
            for start in range(0, len(ids), 500):
                session.execute(update(Url).where(
                    many_rows.among(session, Url.id, ids[start:start + 500]))
                    .values(section=name).execution_options(synchronize_session=False))
            wrote = True
    if everything:
        site.sections_assigned = site.sections
        wrote = True
    return wrote


def counts(session: Session, site: Site) -> dict[str, int]:
    """Live URLs per section as assigned ("" for the default files)."""
    return dict(session.execute(
        select(Url.section, func.count()).where(Url.site_id == site.id,
                                                Url.deleted_at.is_(None))
        .group_by(Url.section)).all())


def matching_now(session: Session, site: Site, definition: str | None,
                 limit: int = 20_000) -> dict[str, int] | None:
    """How many live URLs each section of `definition` would hold now ("" the rest), or None
    when the site has more than `limit` URLs (too many to match while a page waits)."""
    sections = definitions(definition)
    if not sections or site.url_count > limit:
        return None
    found = {section.name: 0 for section in sections} | {"": 0}
    for loc in session.scalars(select(Url.loc).where(Url.site_id == site.id,
                                                     Url.deleted_at.is_(None))):
        found[section_of(sections, loc, site.encoding or "utf-8")] += 1
    return found


# Writing a site's files section by section -------------------------------------------------


def plan(session: Session, site: Site, shape: str, kept: Callable[[int], bool],
         ) -> dict[str, incremental.Plan | None] | None:
    """Per group (section, "" the default), what the last set left that can be reused (None:
    write the group whole); None for a full run."""
    source = incremental.last_source(session, site, shape, kept)
    if source is None:
        return None
    stem, names = site.sitemap_url.rsplit("/", 1)[-1].removesuffix(".xml"), groups(site)
    files: dict[str, list[tuple[int, GenerationFile]]] = {name: [] for name in names}
    for file in source.files:
        if file.kind != "urlset":
            continue
        found = group_of(file.name, stem, names)
        if found is None or file.first_url_id is None or file.last_url_id is None:
            return None
        files[found[0]].append((found[1], file))
    changed = session.execute(select(Url.id, Url.section).where(
        Url.site_id == site.id, Url.change_seq > source.change_seq)
        .limit(incremental.MAX_CHANGED + 1)).all()
    if len(changed) > incremental.MAX_CHANGED:
        return None
    plans: dict[str, incremental.Plan | None] = {}
    for name in names:
        ordered = [file for _, file in sorted(files[name], key=lambda pair: pair[0])]
        bounds = [f.last_url_id for f in ordered[:-1]]
        dirty = [False] * len(ordered)
        touched = False
        for url_id, section in changed:
            if section == name:  # None: not assigned yet, in no file and not written now
                touched = True
                if ordered:
                    dirty[bisect.bisect_left(bounds, url_id)] = True
        whole = touched and (not ordered or all(dirty))
        plans[name] = None if whole else incremental.Plan(source, ordered, dirty)
    return plans


def write_files(session: Session, site: Site, shape: str, kept: Callable[[int], bool],
                folder: Path, header: str, limits: Limits,
                entries: Callable[[str, int | None, int | None], Iterator[tuple[int, str]]],
                upto_seq: int | None = None,
                progress: Callable[[int, int], None] | None = None) -> list[BuiltFile]:
    """Write the site's files group by group, reusing the last set's unchanged files;
    `entries(section, after, upto)` gives a section's URLs in an id range. URLs changed
    after `upto_seq` (the run's change number) and not assigned yet wait for the next run."""
    assign(session, site, upto_seq)
    per_group = counts(session, site)
    stem = site.sitemap_url.rsplit("/", 1)[-1].removesuffix(".xml")
    check_index_size(sum(-(-n // limits.max_urls) for n in per_group.values()), limits)
    plans = plan(session, site, shape, kept) or {}
    total, done = sum(per_group.values()), [0]

    def counted(urls: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        for entry in urls:
            done[0] += 1
            if progress and done[0] % 10_000 == 0:
                progress(done[0], total)
            yield entry

    files: list[BuiltFile] = []
    for name in groups(site):
        group_stem = file_stem(stem, name)

        def writer(first: int, group_stem: str = group_stem) -> UrlsetWriter:
            return UrlsetWriter(folder, group_stem, header, limits, first_number=first)

        def urls(after, upto, name: str = name) -> Iterator[tuple[int, str]]:
            return counted(entries(name, after, upto))

        written = None
        if plans.get(name) is not None:
            written = incremental.write_changed(plans[name], writer, urls, at_least=0)
            if written is None:  # a rewritten file no longer fits its place: the group again
                _remove_group(folder, group_stem)
        if written is None:
            with closing(urls(None, None)) as stream:
                written = writer(1).write(stream)
        files.extend(written)
    check_index_size(len(files), limits)
    if progress:
        progress(total, total)
    return files


def _remove_group(folder: Path, group_stem: str) -> None:
    pattern = re.compile(re.escape(group_stem) + r"-\d+\.xml(\.gz)?")
    for path in folder.iterdir():
        if pattern.fullmatch(path.name):
            path.unlink()


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
