"""How a site owner puts this app's files on the site's own host: the addresses the app serves
for a site, and reverse-proxy snippets (nginx, Caddy) that pass exactly those paths to the app
with the Host header the app routes by (docs/serving-and-publishing.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from webapp.models import Site
from webapp.notify import indexnow
from webapp.protocol import origin
from webapp.sitemaps import sections


@dataclass(frozen=True)
class HostPaths:
    """The public paths one host of the site must pass to the app."""

    origin: str  # scheme://host[:port]
    exact: tuple[str, ...]  # /robots.txt, /<key>.txt
    folder: str  # the sitemap folder ("/" or "/maps/"), or "" when this host has no sitemaps
    stem: str  # the sitemap file name without .xml


def host_paths(site: Site) -> list[HostPaths]:
    """Per host (the pages' host first), what it must pass to the app."""
    site_origin, sitemap_origin = origin(site.base_url), origin(site.sitemap_url)
    key_path = urlsplit(indexnow.key_location(site)).path
    path = unquote(urlsplit(site.sitemap_url).path)
    folder, _, name = path.rpartition("/")
    stem = name.removesuffix(".xml")
    pages = ["/robots.txt"] + ([key_path] if site.indexnow_key_location == "root" else [])
    beside = [unquote(key_path)] if site.indexnow_key_location == "sitemap" else []
    if site_origin == sitemap_origin:
        return [HostPaths(site_origin, tuple(pages + beside), folder + "/", stem)]
    return [HostPaths(site_origin, tuple(pages), "", ""),
            HostPaths(sitemap_origin, tuple(beside), folder + "/", stem)]


def _host_header(host_origin: str) -> str:
    return urlsplit(host_origin).netloc


def nginx(site: Site, app_url: str) -> str:
    """`location` blocks for each host's `server { }`, proxying to the app at `app_url`."""
    target = app_url.rstrip("/")
    blocks = []
    for host in host_paths(site):
        proxy = (f"    proxy_pass {target};\n"
                 f"    proxy_set_header Host {_host_header(host.origin)};\n"
                 "    proxy_set_header X-Forwarded-Proto $scheme;\n"
                 "    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n")
        lines = [f"# In the server {{ }} block of {host.origin}"]
        for path in host.exact:
            lines.append(f"location = {path} {{\n{proxy}}}")
        if host.folder:
            names = "|".join(re.escape(s.name) for s in sections.definitions(site.sections))
            middle = f"(-({names}))?" if names else ""  # each section's files
            pattern = (f"^{re.escape(host.folder)}{re.escape(host.stem)}{middle}"
                       r"(-\d+)?\.xml(\.gz)?$")
            lines.append(f'location ~ "{pattern}" {{\n{proxy}}}')
            lines.append(f"location = {host.folder}{host.stem}.xsl {{\n{proxy}}}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def caddy(site: Site, app_url: str) -> str:
    """A Caddyfile site block per host that proxies the app's paths and serves the rest as
    before (`handle` the rest with the site's existing directives)."""
    target = urlsplit(app_url).netloc
    blocks = []
    for host in host_paths(site):
        paths = list(host.exact)
        if host.folder:
            prefix = f"{host.folder}{host.stem}"
            paths += [f"{prefix}.xml", f"{prefix}.xml.gz", f"{prefix}-*.xml",
                      f"{prefix}-*.xml.gz", f"{prefix}.xsl"]
        blocks.append(
            f"{host.origin} {{\n"
            f"    @sitemap_dashboard path {' '.join(paths)}\n"
            f"    reverse_proxy @sitemap_dashboard {target} {{\n"
            f"        header_up Host {{host}}\n"
            f"    }}\n"
            f"    # ... the site's own directives\n"
            f"}}")
    return "\n\n".join(blocks) + "\n"
