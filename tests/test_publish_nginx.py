"""The How to publish page's nginx snippet, in a real nginx: `nginx -t` accepts a server block
that includes it, every file the site publishes (sections, news, numbered files, .gz twins,
the stylesheet), robots.txt and the IndexNow key file reach the app through it, and a name
the site does not publish does not. Skipped, saying so, where nginx is not installed (.ci/run
installs it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
import requests

from tests.builders import free_port, make_site, served
from tests.probes import wait_for
from tests.test_news import add_articles
from webapp import jobs
from webapp.models import Url
from webapp.sitemaps import get_store
from webapp.sites import publish_guide, update_site

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

pytestmark = pytest.mark.skipif(not os.access(NGINX, os.X_OK),
                                reason=f"nginx is not installed (no {NGINX}): apt-get install "
                                       "nginx-light, as .ci/run does")


def _config(folder, port: int, blocks: dict[str, str]) -> str:
    """An nginx.conf of its own under `folder`: a server per host that includes the snippet's
    block for it, and answers everything else itself."""
    servers = []
    for host, block in blocks.items():
        (folder / f"{host}.conf").write_text(block)
        servers.append(f"""
    server {{
        listen 127.0.0.1:{port};
        server_name {host};
        include {folder / host}.conf;
        location / {{ return 404 "nginx kept it\\n"; }}
    }}""")
    temp = "\n".join(f"    {kind}_temp_path {folder / kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    # As root, the workers would otherwise run as nobody, who cannot enter pytest's folders.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (f"{user}worker_processes 1;\nevents {{ worker_connections 64; }}\n"
            f"http {{\n    access_log {folder / 'access.log'};\n{temp}\n"
            + "".join(servers) + "\n}\n")


def _nginx(folder, *extra: str) -> list[str]:
    return [NGINX, "-p", f"{folder}/", "-c", str(folder / "nginx.conf"), "-e",
            str(folder / "error.log"), "-g", f"daemon off; pid {folder / 'nginx.pid'};", *extra]


def _wait_for_port(port: int, process: subprocess.Popen, folder) -> None:
    def listening() -> bool:
        if process.poll() is not None:
            pytest.fail(f"nginx stopped: {(folder / 'error.log').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(listening, 30, "nginx to listen")


def _running_nginx(folder, blocks: dict[str, str]):
    """nginx with these server blocks on a free port of 127.0.0.1, checked by `nginx -t`
    first: (its port, the process)."""
    port = free_port()
    (folder / "nginx.conf").write_text(_config(folder, port, blocks))
    tested = subprocess.run(_nginx(folder, "-t"), capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0, tested.stderr
    process = subprocess.Popen(_nginx(folder), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # it writes to error.log
    _wait_for_port(port, process, folder)
    return port, process


def _published_paths(app, site, folder: str) -> list[str]:
    """The path of every file the site publishes, and of each `.gz` twin served."""
    published = get_store(app).published(site.storage_key)
    paths = []
    for name, file in sorted(published.files.items()):
        paths.append(folder + name)
        if file.gzip_size is not None:
            paths.append(f"{folder}{name}.gz")
    return paths


def _news_site(session, name: str, base_url: str, **settings):
    """A site that publishes every kind of file: sections, news, numbered files, stylesheet."""
    site = make_site(session, name, base_url, schedule="off", next_run_at=None,
                     max_urls_per_file=2, stylesheet=True, **settings)
    update_site(session, site, {"news_name": "The Shop Times", "news_language": "en",
                                "sections": f"blog {urlsplit(base_url).path}blog/"})
    session.add_all(Url(site_id=site.id, loc=f"{site.base_url}{path}")
                    for path in ("blog/a", "blog/b", "blog/c", "page/a", "page/b", "page/c"))
    site.url_count += 6
    session.commit()
    add_articles(session, site, [datetime.now(UTC) - timedelta(hours=n) for n in (1, 2)])
    return site


CASES = {
    # everything on the pages' host, the key file at its root
    "one host": dict(name="Shop", base_url="http://shop.test/"),
    # the sitemap in a folder of another host
    "two hosts": dict(name="Paper", base_url="http://paper.test/",
                      sitemap_url="http://files.test/maps/sitemap.xml"),
    # the site in a folder, the key file beside the sitemap
    "a folder": dict(name="Maps", base_url="http://maps.test/maps/",
                     sitemap_url="http://maps.test/maps/sitemap.xml",
                     indexnow_key_location="sitemap"),
}
NOT_PUBLISHED = ("sitemap-news-1.xml", "sitemap-0.xml", "sitemap-01.xml", "sitemap-blog.xml",
                 "sitemap-shop-1.xml", "sitemap-news.xml.gz.gz", "sitemap.xsl.gz", "other.xml",
                 "sitemap.xml.bak", "sitemapXxml", "index.html")


@pytest.mark.parametrize("case", list(CASES))
def test_a_real_nginx_passes_every_published_file_and_nothing_else(app, session, tmp_path,
                                                                   case):
    site = _news_site(session, **CASES[case])
    jobs.regenerate(site.id, app)
    hosts = publish_guide.host_paths(site)
    paths = _published_paths(app, site, hosts[-1].folder)
    names = {path.rsplit("/", 1)[1] for path in paths}
    for name in ("sitemap.xml", "sitemap-1.xml.gz", "sitemap-blog-2.xml", "sitemap-news.xml",
                 "sitemap-news.xml.gz", "sitemap.xsl"):
        assert name in names, (name, sorted(names))  # the site publishes every kind of file
    reached: list[str] = []

    def recording(environ, start_response):
        reached.append(environ["PATH_INFO"])
        return app(environ, start_response)

    with served(recording) as app_url:
        blocks = {host.origin.split("//")[1]: publish_guide.nginx_block(host, app_url)
                  for host in hosts}
        port, process = _running_nginx(tmp_path, blocks)
        try:
            asked = requests.Session()
            asked.trust_env = False
            sitemap_host = hosts[-1].origin.split("//")[1]
            folder = hosts[-1].folder
            exact = [(host.origin.split("//")[1], path) for host in hosts for path in host.exact]
            assert (site.base_url.split("/")[2], "/robots.txt") in exact
            assert any(path.endswith(f"/{site.indexnow_key}.txt") for _, path in exact)
            for host, path in [(sitemap_host, path) for path in paths] + exact:
                answer = asked.get(f"http://127.0.0.1:{port}{path}", headers={"Host": host},
                                   timeout=30)
                assert answer.status_code == 200, (host, path, answer.status_code, answer.text)
                assert reached[-1] == path, (host, path, reached[-3:])
                if path.endswith(f"{site.indexnow_key}.txt"):
                    assert answer.text == site.indexnow_key
            for name in NOT_PUBLISHED:
                answer = asked.get(f"http://127.0.0.1:{port}{folder}{name}",
                                   headers={"Host": sitemap_host}, timeout=30)
                assert (answer.status_code, answer.text) == (404, "nginx kept it\n"), name
                assert f"{folder}{name}" not in reached, name
        finally:
            process.terminate()
            process.wait(timeout=30)
