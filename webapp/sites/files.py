"""The file names a site publishes beside its sitemap, and the rule that two sites sharing a
folder publish none of the same name.

A site whose sitemap is `<folder>/<stem>.xml` publishes, each with a `.gz` twin:
`<stem>.xml` and `<stem>-N.xml` (its urlset files and index; `<stem>.xsl` with a stylesheet),
`<stem>-NAME-N.xml` for each section NAME, and, as a news publisher, `<stem>-news.xml` and
`<stem>-news-N.xml` from N = 2. Each such family is a `Family`; two families clash when one
file name belongs to both.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, ShownUrl, rule_text
from webapp.models import Site
from webapp.sitemaps import news_stem
from webapp.sitemaps import sections as site_sections


@dataclass(frozen=True)
class Family:
    """Files `<stem>.xml` (when `bare`) and `<stem>-N.xml` for N from `first`; `field` is the
    setting they come from, `section` the line of the section (for `sections`)."""

    stem: str
    bare: bool
    first: int
    field: str
    section: tuple[int, str] | None = None  # (line number, "NAME PATTERN")


def file_stem(sitemap_url: str) -> tuple[str, str]:
    """(folder URL, stem) of the files a sitemap URL publishes: stem.xml, stem-N.xml, stem.xsl."""
    folder, _, name = sitemap_url.rpartition("/")
    return folder, name.removesuffix(".xml")


def families(stem: str, sections: str | None, news: bool) -> list[Family]:
    """Every file name a site with this stem, sections and news setting can publish."""
    found = [Family(stem, True, 1, "sitemap_url")]
    for n, section in enumerate(site_sections.definitions(sections), start=1):
        found.append(Family(site_sections.file_stem(stem, section.name), False, 1, "sections",
                            (n, f"{section.name} {section.pattern}")))
    if news:
        found.append(Family(news_stem(stem), True, 2, "news_name"))
    return found


def _from(first: int) -> str:
    """A regex of the whole numbers from `first` (1 to 9) as file names write them."""
    return "[1-9][0-9]*" if first == 1 else f"([{first}-9]|[1-9][0-9]+)"


def name_pattern(family: Family) -> str:
    """A regex of the family's `.xml` names (no `.gz`), in the syntax PCRE (nginx) and RE2
    (Caddy) share."""
    numbered = f"-{_from(family.first)}"
    return re.escape(family.stem) + (f"({numbered})?" if family.bare else numbered) + r"\.xml"


def shared_name(a: Family, b: Family) -> str | None:
    """A file name both families hold (the first one), or None when they hold none."""
    if a.stem == b.stem:
        if a.bare and b.bare:
            return f"{a.stem}.xml"
        return f"{a.stem}-{max(a.first, b.first)}.xml"
    for one, other in ((a, b), (b, a)):  # `<one>-N.xml` is `<other>.xml`
        number = re.fullmatch(re.escape(one.stem) + r"-([1-9][0-9]*)", other.stem)
        if number and other.bare and int(number.group(1)) >= one.first:
            return f"{other.stem}.xml"
    return None


def check_free(session: Session, site: Site, sitemap_url: str, sections: str | None,
               news_name: str | None, changed: Collection[str]) -> None:
    """Refuse settings that would make the site publish a file another site of its folder
    publishes, naming the setting that brings the file and the file. `changed`: the naming
    settings that change (all for a new site); the files they bring are checked."""
    moved = "sitemap_url" in changed or site.id is None
    folder, stem = file_stem(sitemap_url)
    mine = [family for family in families(stem, sections, bool(news_name))
            if moved or family.field in changed]
    if not mine:
        return
    others = select(Site).where(Site.sitemap_url.startswith(f"{folder}/", autoescape=True))
    if site.id is not None:
        others = others.where(Site.id != site.id)
    for other in session.scalars(others.order_by(Site.id)):
        other_folder, other_stem = file_stem(other.sitemap_url)
        if other_folder != folder:  # a folder below
            continue
        for family in mine:
            for theirs in families(other_stem, other.sections, bool(other.news_name)):
                name = shared_name(family, theirs)
                if name is not None:
                    field = family.field if family.field in changed else "sitemap_url"
                    raise _clash(field, family, name, other, sitemap_url, news_name)


def _clash(field: str, family: Family, name: str, other: Site, sitemap_url: str,
           news_name: str | None) -> InvalidValue:
    """The error naming the setting that brings the file `name` and the site that has it."""
    values = {"site": repr(other.slug), "sitemap_url": ShownUrl(other.sitemap_url),
              "file": name}
    if field == "sections" and family.section is not None:
        line, text = family.section
        return InvalidValue("sections", text, rule_text(
            "line %(line)s: %(rule)s", line=line, rule=rule_text(
                "the section's files would have the same names as files of site %(site)s "
                "(%(sitemap_url)s) in the same folder, such as %(file)s; choose another "
                "section name", **values)))
    if field == "news_name":
        return InvalidValue("news_name", news_name or "", rule_text(
            "would make the site publish a news sitemap, %(file)s, which site %(site)s "
            "(%(sitemap_url)s) publishes in the same folder too; choose another sitemap_url "
            "for one of the two sites", **values))
    return InvalidValue("sitemap_url", ShownUrl(sitemap_url), rule_text(
        "would publish files with the same names as site %(site)s (%(sitemap_url)s) in the "
        "same folder, such as %(file)s; choose another file name or folder", **values))
