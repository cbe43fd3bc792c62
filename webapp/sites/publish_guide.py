"""How a site owner puts this app's files on the site's own host: the addresses the app serves
for a site, and reverse-proxy snippets (nginx, Caddy) that pass exactly those paths to the app
with the Host header the app routes by (docs/serving-and-publishing.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from urllib.parse import unquote, urlsplit

from webapp.models import Site
from webapp.notify import indexnow
from webapp.protocol import origin
from webapp.sites import files


@dataclass(frozen=True)
class HostPaths:
    """The public paths one host of the site must pass to the app."""

    origin: str  # scheme://host[:port]
    exact: tuple[str, ...]  # /robots.txt, /<key>.txt, the stylesheet
    folder: str  # the sitemap folder ("/" or "/maps/"), or "" when this host has no sitemaps
    files: str = ""  # a regex of the sitemap files' names in `folder`, `.gz` twins included

    @property
    def pattern(self) -> str:
        """A regex of every path under `folder` the site publishes a sitemap file at."""
        return f"^{re.escape(self.folder)}{self.files}$" if self.folder else ""


def file_names(site: Site, stem: str) -> str:
    """A regex of the names of every sitemap file the site's settings make it publish, as
    files.families names them: the entry and its numbered files, each section's, the news
    files for a news publisher, each with its `.gz` twin. Numbered files are in whether or
    not the site has grown into them yet; a change of sections or news changes it. `stem`: the
    entry's name without `.xml`, as the proxy reads it (decoded)."""
    names = [files.name_pattern(family)
             for family in files.families(stem, site.sections, bool(site.news_name))]
    return f"({'|'.join(names)})" + r"(\.gz)?"


def host_paths(site: Site) -> list[HostPaths]:
    """Per host (the pages' host first), what it must pass to the app."""
    site_origin, sitemap_origin = origin(site.base_url), origin(site.sitemap_url)
    key_path = urlsplit(indexnow.key_location(site)).path
    path = unquote(urlsplit(site.sitemap_url).path)
    folder, _, name = path.rpartition("/")
    stem = name.removesuffix(".xml")
    stylesheet = [f"{folder}/{stem}.xsl"] if site.stylesheet else []
    pages = ["/robots.txt"] + ([key_path] if site.indexnow_key_location == "root" else [])
    beside = [unquote(key_path)] if site.indexnow_key_location == "sitemap" else []
    sitemaps = HostPaths(sitemap_origin, tuple(beside + stylesheet), folder + "/",
                         file_names(site, stem))
    if site_origin == sitemap_origin:
        return [replace(sitemaps, exact=tuple(pages) + sitemaps.exact)]
    return [HostPaths(site_origin, tuple(pages), ""), sitemaps]


def _host_header(host_origin: str) -> str:
    return urlsplit(host_origin).netloc


def nginx_block(host: HostPaths, app_url: str) -> str:
    """The `location` blocks for one host's `server { }`, proxying to the app at `app_url`."""
    proxy = (f"    proxy_pass {app_url.rstrip('/')};\n"
             f"    proxy_set_header Host {_host_header(host.origin)};\n"
             "    proxy_set_header X-Forwarded-Proto $scheme;\n"
             "    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n")
    lines = [f"# In the server {{ }} block of {host.origin}"]
    lines += [f"location = {path} {{\n{proxy}}}" for path in host.exact]
    if host.folder:
        lines.append(f'location ~ "{host.pattern}" {{\n{proxy}}}')
    return "\n".join(lines)


def nginx(site: Site, app_url: str) -> str:
    """`location` blocks for each host's `server { }`, proxying to the app at `app_url`."""
    return "\n\n".join(nginx_block(host, app_url) for host in host_paths(site)) + "\n"


def caddy(site: Site, app_url: str) -> str:
    """A Caddyfile site block per host that proxies the app's paths and serves the rest as
    before (`handle` the rest with the site's existing directives). One regex per host, as
    nginx's, in a raw (backquoted) token."""
    target = urlsplit(app_url).netloc
    blocks = []
    for host in host_paths(site):
        paths = [re.escape(path) for path in host.exact]
        if host.folder:
            paths.append(host.pattern.removeprefix("^").removesuffix("$"))
        blocks.append(
            f"{host.origin} {{\n"
            f"    @sitemap_dashboard path_regexp `^({'|'.join(paths)})$`\n"
            f"    reverse_proxy @sitemap_dashboard {target} {{\n"
            f"        header_up Host {{host}}\n"
            f"    }}\n"
            f"    # ... the site's own directives\n"
            f"}}")
    return "\n\n".join(blocks) + "\n"
