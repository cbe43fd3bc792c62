"""How each site setting appears in the dashboard's forms: its label and help in both
languages, its control (switch, select, time zone, schedule picker, robots.txt editor), its
section, and how the form's fields become the setting's text (the form `sites set` takes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from zoneinfo import available_timezones

from flask_babel import lazy_gettext as _l
from flask_babel import lazy_pgettext
from werkzeug.datastructures import MultiDict

from webapp.models import Site
from webapp.protocol import CHANGEFREQS
from webapp.schedules import picker as schedule_picker
from webapp.sites import OPERATOR_SETTINGS, SETTINGS, site_settings

# How each changefreq reads wherever a person chooses or reads one: the protocol's word and
# what it means. "never" has a context of its own: elsewhere the word means "not yet".
CHANGEFREQ_LABELS = {"always": _l("always"), "hourly": _l("hourly"), "daily": _l("daily"),
                     "weekly": _l("weekly"), "monthly": _l("monthly"), "yearly": _l("yearly"),
                     "never": lazy_pgettext("changefreq", "never")}


@dataclass(frozen=True)
class Field:
    name: str
    label: object  # a lazy string: translated when shown
    help: object
    control: str = "text"  # text, url, number, switch, select, timezone, schedule, robots, lines
    choices: tuple[tuple[str, object], ...] = ()  # (value, label) of a select

    @property
    def operator(self) -> bool:
        """Only an admin changes it (sites.OPERATOR_SETTINGS)."""
        return self.name in OPERATOR_SETTINGS


ENCODINGS = (("utf-8", _l("UTF-8 (most sites)")), ("shift_jis", "Shift_JIS"),
             ("cp932", _l("Shift_JIS (Windows, cp932)")), ("euc_jp", "EUC-JP"),
             ("euc_kr", "EUC-KR"), ("gb18030", "GB18030"), ("big5", "Big5"),
             ("iso8859-1", "ISO-8859-1 (Latin-1)"), ("cp1252", "Windows-1252"))

_FIELDS = [
    Field("name", _l("Name"), _l("How the site is called in the dashboard.")),
    Field("slug", _l("Slug"), _l("The site's identifier in commands, API paths and the "
                                 "addresses under /sitemaps/: lower-case letters, digits "
                                 "and '-'.")),
    Field("base_url", _l("Base URL"), _l("Every URL of the site starts with it, e.g. "
                                         "https://shop.example.com/"), "url"),
    Field("sitemap_url", _l("Sitemap URL"), _l("Where crawlers fetch the entry sitemap: at or "
                                               "above the base URL's folder."), "url"),
    Field("encoding", _l("URL encoding"), _l("How the site's server encodes non-ASCII "
                                             "characters in URLs. Applies to URLs entered "
                                             "from now on."), "select", ENCODINGS),
    Field("default_changefreq", _l("Default change frequency"),
          _l("Written for URLs that have none of their own."), "select",
          (("", _l("None (not written)")), *((value, CHANGEFREQ_LABELS[value])
                                             for value in CHANGEFREQS))),
    Field("default_priority", _l("Default priority"),
          _l("0.0 to 1.0, written for URLs that have none of their own; empty writes none.")),
    Field("max_urls_per_file", _l("URLs per file"),
          _l("Files are split at this many URLs: at most 50,000, the protocol's limit."),
          "number"),
    Field("sections", _l("Sections"),
          _l("One section per line: a name, a space and a path prefix (/blog/), a glob "
             "(/shop/*/item-*) or re: and a regular expression. Each section is written to "
             "files of its own (sitemap-NAME-1.xml, sitemap-NAME-2.xml, ...) listed in the "
             "index; the first section that matches a URL takes it, and the other URLs go "
             "to the usual files."), "lines"),
    Field("stylesheet", _l("XSL stylesheet"),
          _l("Sitemap files point browsers at an XSL stylesheet. Off by default: browsers are "
             "dropping XSLT, and people see the server-rendered table either way."), "switch"),
    Field("robots_txt", _l("robots.txt"),
          _l("Served at /robots.txt on the site's host. Empty serves \"User-agent: *\" and "
             "\"Disallow:\". The Sitemap: line is added once the sitemap is published."),
          "robots"),
    Field("schedule", _l("Regenerate"),
          _l("When the sitemaps are rebuilt even without changes."), "schedule"),
    Field("change_delay", _l("Wait after changes (seconds)"),
          _l("After the last of a burst of URL changes, wait this long before regenerating "
             "(0 to 86400)."), "number"),
    Field("timezone", _l("Time zone"),
          _l("The clock of daily, weekly and cron schedules, e.g. Asia/Tokyo."), "timezone"),
    Field("indexnow_enabled", _l("Announce with IndexNow"),
          _l("Send changed URLs to the IndexNow engines (Bing, Yandex, Naver, Seznam and "
             "others). Turned on, it announces the changes made from then on."), "switch"),
    Field("indexnow_key", _l("IndexNow key"),
          _l("Generated for the site: 8 to 128 letters, digits or '-'. Engines fetch it from "
             "the key file to check that the submissions are yours.")),
    Field("indexnow_key_location", _l("Key file location"),
          _l("Where engines fetch the key file."), "select",
          (("root", _l("At the root of the site's host")),
           ("sitemap", _l("Beside the sitemap (sent as keyLocation)")))),
    Field("indexnow_endpoint", _l("IndexNow endpoint"),
          _l("Empty uses the server's default (INDEXNOW_ENDPOINT). One endpoint is enough: "
             "engines share what they receive."), "url"),
    Field("gsc_property", _l("Search Console property"),
          _l("As Search Console names it: sc-domain:example.com or https://www.example.com/. "
             "Empty turns submissions off.")),
    Field("gsc_credentials", _l("Key file on the server"),
          _l("Path of a service account's JSON key file on the server. A key uploaded below "
             "wins over it.")),
    Field("gsc_endpoint", _l("Search Console API address"),
          _l("Empty uses GSC_ENDPOINT. The access token is sent only to Google's API hosts or "
             "GSC_ENDPOINT's host."), "url"),
    Field("ping_urls", _l("Ping URLs"),
          _l("Comma-separated URL templates fetched after each changed generation; {sitemap} "
             "becomes the URL-encoded sitemap URL. None by default.")),
    Field("exclude", _l("Exclude"),
          _l("One rule per line: a path glob such as /tmp/* or re: and a regular expression. "
             "URLs they match are refused wherever they come from; stored URLs they match "
             "stay until you delete them (Discover page)."), "lines"),
    Field("strip_params", _l("Query parameters to remove"),
          _l("Removed from every URL that comes in: a comma list of names or globs such as "
             "utm_*,gclid.")),
    Field("discover_mode", _l("URLs found by a discovery crawl"),
          _l("Listed for you to review, or added to the site at once."), "select",
          (("review", _l("Listed for review")), ("add", _l("Added at once")))),
    Field("lastmod_source", _l("Where lastmod comes from"),
          _l("As given (CSV, API, the form), the time verification last saw the page's "
             "content change, or the newer of the two."), "select",
          (("given", _l("As given")), ("content", _l("When the content changed")),
           ("newest", _l("The newer of the two")))),
    Field("leave_out", _l("Left out of the sitemap"),
          _l("A comma list of what a URL's last check may find that keeps it out of the "
             "sitemap: broken, redirected, noindex, canonical, blocked (by robots.txt).")),
    Field("verify_schedule", _l("Verification schedule"),
          _l("When every live URL is fetched and checked: every 1d, cron:0 4 * * * or off.")),
    Field("user_agent", _l("User-Agent"),
          _l("What verification and discovery call themselves; empty uses the default, "
             "which names this app.")),
    Field("verify_ignore", _l("Text that is no change"),
          _l("Regular expressions, one per line, of page text that does not count as a "
             "change (a timestamp, a nonce)."), "lines"),
    Field("news_name", _l("News publication name"),
          _l("As it appears on Google News. Set, the site publishes a news sitemap "
             "(sitemap-news.xml) of the articles of the last two days; empty turns it off.")),
    Field("news_language", _l("News publication language"),
          _l("An ISO 639 code of 2 or 3 letters, such as en or ja; zh-cn or zh-tw for "
             "Chinese. Required with a publication name.")),
]
FIELDS = {field.name: field for field in _FIELDS}
assert set(FIELDS) == set(SETTINGS), (
    f"every setting needs a field here, and no more: {sorted(set(FIELDS) ^ set(SETTINGS))}")
assert list(CHANGEFREQS) == [value for value, _ in FIELDS["default_changefreq"].choices[1:]]

# The settings form, in the order people think about a site.
SECTIONS = (
    (_l("Site"), ("name", "slug", "base_url", "sitemap_url", "encoding")),
    (_l("Sitemap files"), ("default_changefreq", "default_priority", "max_urls_per_file",
                           "sections", "stylesheet", "robots_txt")),
    (_l("Schedule"), ("schedule", "timezone", "change_delay")),
    (_l("IndexNow"), ("indexnow_enabled", "indexnow_key", "indexnow_key_location",
                      "indexnow_endpoint")),
    (_l("Search Console and pings"), ("gsc_property", "gsc_credentials", "gsc_endpoint",
                                      "ping_urls")),
    (_l("Exclusions and discovery"), ("exclude", "strip_params", "discover_mode")),
    (_l("Verification"), ("lastmod_source", "leave_out", "verify_schedule", "user_agent",
                          "verify_ignore")),
    (_l("Google News"), ("news_name", "news_language")),
)
assert sorted(sum((names for _, names in SECTIONS), ())) == sorted(SETTINGS), (
    "every setting belongs to one section of the form")


@cache
def timezones() -> tuple[str, ...]:
    """Every IANA zone name this Python knows, for the time zone control's suggestions."""
    return tuple(sorted(available_timezones()))


def form_text(name: str, form: MultiDict) -> str | None:
    """The setting's text as `sites set` reads it, from the form's fields; None when the form
    does not carry the setting. A schedule picker's fields raise InvalidValue when they make
    no schedule."""
    control = FIELDS[name].control
    if control == "schedule" and "schedule_mode" in form:
        return schedule_picker.compose(form)
    if name not in form:
        return None
    if control == "switch":  # a hidden "off" comes first; a checked box's "on" after it
        return form.getlist(name)[-1]
    if control in ("robots", "lines"):  # real line breaks, in the escaped form settings take
        return SETTINGS[name][1](form[name].replace("\r\n", "\n"))
    return form[name]


def shown(site: Site) -> dict[str, object]:
    """What each control shows for the stored settings: text, a switch's state, the robots.txt
    as it is, the schedule picker's fields."""
    values: dict[str, object] = dict(site_settings(site))
    for name, field in FIELDS.items():
        if field.control in ("robots", "lines"):  # real lines in the text box
            values[name] = getattr(site, name) or ""
    return values


def posted(values: Mapping[str, object], form: MultiDict) -> dict[str, object]:
    """The controls as the person left them, to show again with the errors."""
    values = dict(values)
    for name, field in FIELDS.items():
        if name in form and field.control not in ("switch", "schedule"):
            values[name] = form[name]
        elif field.control == "switch" and name in form:
            values[name] = form.getlist(name)[-1]
    return values
