"""Verify a large site against a local web server: speed, memory, and what a second run costs
when nothing changed.

    python bench/verify.py --urls 10000 100000

For each size: a fresh SQLite database holding one site of N URLs on a local server (a small
asyncio HTTP/1.1 server in a process of its own, keep-alive, Date and Server headers, an ETag
and a Last-Modified per page, 304 for a matching If-None-Match or If-Modified-Since), then
`verify_site` twice in a process of its own: the first run fetches every page (GET,
fingerprint), the second asks conditionally and is answered 304. Prints URLs per second of
each run, its CPU seconds and the server's, the ratio, and the process's peak RSS: targets
are 500 URLs/s or more, a second run at least 3x faster, and peak RSS within 10% between the
sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import json
import os
import re
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import fresh_site_database

# About 25 KB of HTML, as a shop's product page: navigation, text, a script that changes on
# every request (a nonce), and a footer.
PAGE = ("<!doctype html><html><head><title>Page {n}</title><script>var t={t};</script>"
        "<link rel=canonical href=\"/p/{n}\"><style>body{{margin:0}}</style></head><body>"
        + "<nav><ul>" + "".join(f"<li><a href=\"/c/{i}\">Category {i}</a></li>"
                                for i in range(60)) + "</ul></nav>"
        + "<main><h1>Product {n}</h1>"
        + "<p>Some words about the product, enough to look like a page people read.</p>" * 220
        + "</main><footer>Shop, 1 Example Street</footer></body></html>")


# The page as bytes around its number and its nonce, encoded once: the server runs on the same
# two cores as the verifier, and formatting 20 KB per request would be the server's own cost
# counted against the verifier.
_SLOTS = re.findall(r"\{([nt])\}", PAGE)  # "n" and "t", in the order PAGE names them
_PARTS = [part.replace("{{", "{").replace("}}", "}").encode()
          for part in re.split(r"\{[nt]\}", PAGE)]


def render(n: bytes, t: bytes) -> bytes:
    """PAGE.format(n=n, t=t), encoded, from the parts encoded once."""
    values = {"n": n, "t": t}
    out = [_PARTS[0]]
    for slot, part in zip(_SLOTS, _PARTS[1:]):
        out += (values[slot], part)
    return b"".join(out)


# Every page last changed at this time; sent as Last-Modified, as a web server sends a file's.
MODIFIED = b"Thu, 01 Jan 2026 00:00:00 GMT"


class _Page(asyncio.Protocol):
    """One keep-alive connection answered as a web server answers: Date, Server, an ETag and a
    Last-Modified per page, and 304 when If-None-Match matches (or, without it,
    If-Modified-Since is not earlier than Last-Modified)."""

    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            method, path, _ = lines[0].split(b" ", 2)
            fields = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                fields[name.strip().lower()] = value.strip()
            tag = b'"' + path.rsplit(b"/", 1)[-1] + b'"'
            if b"if-none-match" in fields:
                matched = tag in fields[b"if-none-match"]
            else:
                since = fields.get(b"if-modified-since")
                matched = since is not None and _date(since) >= _date(MODIFIED)
            if path == b"/robots.txt":
                self._send(404, b"", b"text/plain")
            elif matched:
                self._send(304, b"", None, tag)
            else:
                body = render(path.rsplit(b"/", 1)[-1], b"%d" % time.monotonic_ns())
                self._send(200, b"" if method == b"HEAD" else body,
                           b"text/html; charset=utf-8", tag)

    def _send(self, status, body, content_type, tag=None):
        reason = {200: b"OK", 304: b"Not Modified", 404: b"Not Found"}[status]
        headers = [b"HTTP/1.1 %d %s" % (status, reason), b"Server: bench",
                   b"Date: " + _now()]
        if status != 304:
            headers.append(b"Content-Length: %d" % len(body))
        if content_type:
            headers.append(b"Content-Type: " + content_type)
        if tag:
            headers += (b"Last-Modified: " + MODIFIED, b"ETag: " + tag)
        self.transport.write(b"\r\n".join(headers) + b"\r\n\r\n" + body)


def _date(value: bytes) -> float:
    try:
        return email.utils.parsedate_to_datetime(value.decode("latin-1")).timestamp()
    except (TypeError, ValueError):
        return 0.0


_clock: list = [0, b""]


def _now() -> bytes:
    """The Date header's value, formatted once a second."""
    second = int(time.time())
    if _clock[0] != second:
        _clock[:] = [second, email.utils.formatdate(second, usegmt=True).encode()]
    return _clock[1]


def serve(port: int) -> None:
    async def main():
        server = await asyncio.get_running_loop().create_server(_Page, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database(folder: Path, urls: int, base: str) -> str:
    path = folder / f"verify-{urls}.db"
    now = fresh_site_database(path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE sites SET base_url = ?, sitemap_url = ?, url_count = ? WHERE id = 1",
                    (base, base + "sitemap.xml", urls))
        con.executemany("INSERT INTO urls (site_id, loc, lastmod, created_at, updated_at) "
                        "VALUES (1, ?, '2026-01-01', ?, ?)",
                        ((f"{base}p/{n}", now, now) for n in range(urls)))
    return f"sqlite:///{path}"


def cpu_of(pid: int | None) -> float:
    """CPU seconds (user and system) another process has used so far; 0 where /proc is not."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(database_url: str, folder: str, concurrency: int, server: int | None) -> dict:
    """Two runs in this process: their seconds, their CPU and the server's, and the peak RSS
    after each."""
    from webapp import create_app
    from webapp.verify import verify_site

    app = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "bench",
                      "INSTANCE_PATH": folder, "OUTBOUND_ALLOW": "127.0.0.1",
                      "VERIFY_DELAY_MS": 0, "VERIFY_CONCURRENCY": concurrency,
                      "CELERY_BROKER_URL": "memory://"})
    figures = {}
    for name in ("first", "second"):
        started, cpu, served = time.perf_counter(), time.process_time(), cpu_of(server)
        summary = verify_site(app, 1)
        figures[name] = time.perf_counter() - started
        figures[f"{name}_cpu"] = time.process_time() - cpu
        figures[f"{name}_server_cpu"] = cpu_of(server) - served
        figures[f"{name}_counts"] = summary.counts
        figures[f"{name}_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    if args.measure:
        print(json.dumps(measure(*args.measure, args.concurrency, args.server_pid)))
        return
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        base = f"http://127.0.0.1:{port}/"
        with tempfile.TemporaryDirectory() as folder:
            rows = []
            for urls in args.urls:
                url = database(Path(folder), urls, base)
                print(f"loadavg before {urls:,} URLs: {Path('/proc/loadavg').read_text().strip()}")
                out = subprocess.run([sys.executable, __file__, "--measure", url,
                                      str(Path(folder) / f"instance-{urls}"),
                                      "--concurrency", str(args.concurrency),
                                      "--server-pid", str(server.pid)],
                                     check=True, capture_output=True, text=True).stdout
                figures = json.loads(out.strip().splitlines()[-1])
                rows.append((urls, figures))
                first, second = figures["first"], figures["second"]
                print(f"{urls:>9,} URLs: first run {first:7.1f} s ({urls / first:6.0f} URLs/s; "
                      f"{figures['first_cpu']:.1f} s CPU, server "
                      f"{figures['first_server_cpu']:.1f}), second run {second:6.1f} s "
                      f"({urls / second:6.0f} URLs/s; {figures['second_cpu']:.1f} s CPU, server "
                      f"{figures['second_server_cpu']:.1f}; {first / second:.1f}x faster), peak "
                      f"RSS {figures['second_rss_mb']:.0f} MB  {figures['first_counts']} then "
                      f"{figures['second_counts']}")
            if len(rows) > 1:
                low, high = rows[0][1]["second_rss_mb"], rows[-1][1]["second_rss_mb"]
                print(f"peak RSS {rows[0][0]:,} -> {rows[-1][0]:,} URLs: {low:.0f} -> "
                      f"{high:.0f} MB ({(high - low) / low * 100:+.1f}%)")
            print(f"loadavg after: {Path('/proc/loadavg').read_text().strip()}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
