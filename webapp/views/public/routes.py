"""Which site a public request is for (by slug, or by the host it was sent to), and the
robots.txt a site's host serves.

Serving must not query the database for every crawler request, so each process keeps a small
table of every site's public addresses and rebuilds it at most every `ttl` seconds; a change
to a site reaches every process within that time, and the process that commits it at once.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urlsplit

from sqlalchemy import event, inspect, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import ORMExecuteState, Session, lazyload, sessionmaker

from webapp.db import after_commit
from webapp.models import Site
from webapp.protocol import DEFAULT_PORTS, directory, origin
from webapp.sitemaps import SitemapStore, news_sitemap_names

log = logging.getLogger(__name__)

DEFAULT_ROBOTS_TXT = "User-agent: *\nDisallow:\n"


@dataclass(frozen=True)
class SiteRoute:
    id: int
    slug: str
    site_origin: str  # scheme://host[:port] of the pages: robots.txt and the key file live here
    sitemap_origin: str  # scheme://host[:port] of the sitemap files
    sitemap_folder: bytes  # path of the sitemap's directory as raw bytes, ending with "/"
    sitemap_url_folder: str  # the same directory as a URL, as index entries write it
    sitemap_url: str
    entry_name: str  # the file name of the sitemap URL, e.g. sitemap.xml
    robots_txt: str  # the site's own text; its `Sitemap:` line is added while it publishes
    sitemap_line: str | None  # that line, or None when the text carries it already
    indexnow_key: str
    key_beside_sitemap: bool  # the key file is served in the sitemap's folder (keyLocation)
    storage_key: str


# The columns a route is made of: a change to any other (a lease, a change number) leaves it.
ROUTE_COLUMNS = ("slug", "base_url", "sitemap_url", "robots_txt", "indexnow_key",
                 "indexnow_key_location", "storage_key")


def robots_txt(site: Site, written: str | None = None) -> tuple[str, str | None]:
    """The site's robots.txt as written (or as `written`, a text not yet saved), and the
    `Sitemap:` line for its entry sitemap that it lacks (None when the text has it)."""
    text = ((site.robots_txt if written is None else written) or DEFAULT_ROBOTS_TXT
            ).rstrip("\n") + "\n"
    wanted = f"sitemap: {site.sitemap_url}".lower()
    if any(line.strip().lower() == wanted for line in text.splitlines()):
        return text, None
    return text, f"Sitemap: {site.sitemap_url}"


def host_robots_txt(sites: list[SiteRoute], publishes: Callable[[SiteRoute], bool],
                    news: Callable[[SiteRoute], list[str]] = lambda route: []) -> str:
    """The first site's robots.txt, with a `Sitemap:` line for every site on the host that
    `publishes` its entry sitemap: a line for a site with nothing published would send
    crawlers to a 404. A line for each `news` sitemap published follows its site's."""
    text = sites[0].robots_txt
    if sites[0].sitemap_line and publishes(sites[0]):
        text += f"\n{sites[0].sitemap_line}\n"
    for n, route in enumerate(sites):
        line = f"Sitemap: {route.sitemap_url}"
        if n and line.lower() not in text.lower() and publishes(route):
            text += f"{line}\n"
        for url in news(route):
            if f"sitemap: {url}".lower() not in text.lower():
                text += f"Sitemap: {url}\n"
    return text


def entry_published(store: SitemapStore, route: SiteRoute) -> bool:
    """Whether the site's entry sitemap is published: an empty site has none."""
    published = store.published(route.storage_key)
    return published is not None and route.entry_name in published.files


def news_sitemaps(store: SitemapStore, route: SiteRoute) -> list[str]:
    """The URLs of the site's published news sitemaps (sitemaps.news), for robots.txt."""
    published = store.published(route.storage_key)
    if published is None:
        return []
    return [route.sitemap_url_folder + name
            for name in news_sitemap_names(published.files.values())]


def robots_txt_preview(sites: list[Site], store: SitemapStore, site_id: int,
                       written: str | None) -> str:
    """What /robots.txt on these sites' host (all of them, in id order) will answer once the
    site `site_id` has the robots.txt `written`: the settings page's preview, made by the
    function that serves it."""
    return host_robots_txt([_route(site, written if site.id == site_id else None)
                            for site in sites], lambda route: entry_published(store, route),
                           lambda route: news_sitemaps(store, route))


def _route(site: Site, written: str | None = None) -> SiteRoute:
    path = urlsplit(site.sitemap_url).path
    text, sitemap_line = robots_txt(site, written)
    return SiteRoute(
        id=site.id, slug=site.slug, site_origin=origin(site.base_url),
        sitemap_origin=origin(site.sitemap_url),
        sitemap_folder=unquote_to_bytes(path[: path.rfind("/") + 1]),
        sitemap_url_folder=directory(site.sitemap_url), sitemap_url=site.sitemap_url,
        entry_name=path.rsplit("/", 1)[-1], robots_txt=text, sitemap_line=sitemap_line,
        indexnow_key=site.indexnow_key, storage_key=site.storage_key,
        key_beside_sitemap=site.indexnow_key_location == "sitemap")


def request_origin(scheme: str, host: str) -> str:
    """scheme://host[:port] of a request, written the way normalised URLs write it."""
    host = host.lower()
    name, _, port = host.rpartition(":") if host.rfind(":") > host.rfind("]") else (host, "", "")
    # isascii: superscript digits (Latin-1 bytes of a Host header) are digits to isdigit()
    # but not to int().
    if port.isascii() and port.isdigit() and int(port) == DEFAULT_PORTS.get(scheme):
        host = name
    return f"{scheme}://{host}"


class SiteRoutes:
    """slug -> route, and origin -> routes, rebuilt from the database when older than `ttl`."""

    def __init__(self, sessions: sessionmaker, ttl: float):
        self._sessions, self._ttl = sessions, ttl
        self._lock = threading.Lock()
        self._loaded_at = float("-inf")
        self._version = 0  # moved on by invalidate(): a reload that began before is stale
        self._by_slug: dict[str, SiteRoute] = {}
        self._by_sitemap_origin: dict[str, list[SiteRoute]] = {}
        self._by_site_origin: dict[str, list[SiteRoute]] = {}

    def _fresh(self) -> None:
        if time.monotonic() - self._loaded_at < self._ttl:
            return
        with self._lock:
            if time.monotonic() - self._loaded_at < self._ttl:
                return
            version = self._version
            try:
                with self._sessions() as session:
                    routes = [_route(site) for site in session.scalars(
                        select(Site).options(lazyload(Site.service_account)).order_by(Site.id))]
            except SQLAlchemyError:
                # The files are on disk: keep serving what is known, and ask again later.
                log.exception("cannot read the sites; serving the last known table")
                self._loaded_at = time.monotonic()
                return
            by_sitemap, by_site = defaultdict(list), defaultdict(list)
            for route in routes:
                by_sitemap[route.sitemap_origin].append(route)
                by_site[route.site_origin].append(route)
            self._by_slug = {route.slug: route for route in routes}
            self._by_sitemap_origin, self._by_site_origin = dict(by_sitemap), dict(by_site)
            # A change committed while the sites were read may be missing: read again next time.
            self._loaded_at = time.monotonic() if version == self._version else float("-inf")

    def invalidate(self) -> None:
        self._version += 1
        self._loaded_at = float("-inf")

    def watch(self) -> None:
        """Rebuild the table after any commit, by a session of this table's, that added,
        removed or re-addressed a site: this process serves the change from its next request.

        The listeners hold the table weakly: SQLAlchemy keeps a sessionmaker's listeners in a
        registry keyed weakly by its Session class, which the sessionmaker holds, so a
        listener holding the table (and through it the sessionmaker) would keep the class,
        the sessionmaker and its app alive for good."""
        table = weakref.ref(self)

        def flushed(session: Session, _context) -> None:
            if _changes_sites(session) and (routes := table()) is not None:
                after_commit(session, routes.invalidate)

        def executed(state: ORMExecuteState) -> None:
            # A site deleted by a DELETE statement (sites.delete_site), not the unit of work.
            if state.is_delete and state.bind_mapper is not None \
                    and state.bind_mapper.class_ is Site and (routes := table()) is not None:
                after_commit(state.session, routes.invalidate)

        event.listen(self._sessions, "after_flush", flushed)
        event.listen(self._sessions, "do_orm_execute", executed)

    def by_slug(self, slug: str) -> SiteRoute | None:
        self._fresh()
        return self._by_slug.get(slug)

    def sitemap_candidates(self, request_origin: str, path: bytes) -> list[tuple[SiteRoute, str]]:
        """(site, file name) pairs whose sitemap folder this request path (raw bytes) is in."""
        self._fresh()
        found = []
        for route in self._by_sitemap_origin.get(request_origin, ()):
            if path.startswith(route.sitemap_folder):
                name = path[len(route.sitemap_folder):]
                if name and b"/" not in name and name.isascii():
                    found.append((route, name.decode("ascii")))
        return found

    def site_host(self, request_origin: str) -> list[SiteRoute]:
        """The sites whose pages are on this origin (usually one)."""
        self._fresh()
        return self._by_site_origin.get(request_origin, [])


def _changes_sites(session: Session) -> bool:
    """Whether the flush added or removed a site, or changed a column its route is made of."""
    return any(isinstance(site, Site) and (
        site in session.new or site in session.deleted or any(
            inspect(site).attrs[name].history.has_changes() for name in ROUTE_COLUMNS))
        for site in (*session.new, *session.deleted, *session.dirty))
