"""Requests per second for a 50,000-URL sitemap: the app under gunicorn against nginx.

    python bench/serve.py [--seconds 5] [--rounds 3] [--connections 16]

Publishes a 50,000-URL site, then serves the same published file from the app (gunicorn with
the production settings of webapp/gunicorn_conf.py, 2 workers) and from nginx (2 workers,
sendfile, gzip_static), both on 127.0.0.1, and loads each with wrk for: the gzip-encoded file,
the plain file, and a conditional GET answered 304. A third server shows gunicorn's own
ceiling on this machine: the same settings running bench/bare_app.py, which answers with the
file's bytes and nothing else. The servers take turns for several rounds and medians are
compared, as they share this machine's two cores with wrk. Needs nginx and wrk (Debian:
apt-get install nginx-light wrk).
Every request goes to 127.0.0.1 only, and each run is bounded by --seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

from common import ROOT
from generate import build_database

URLS = 50_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the server exited with status {process.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"{url} did not answer within {seconds} s")


def wrk(url: str, seconds: int, connections: int, headers: dict[str, str]) -> tuple[float, str]:
    """Requests per second, and the status codes wrk saw other than 2xx/3xx."""
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return rate, (errors.group(1) if errors else "0")


def etag_of(url: str, headers: dict[str, str]) -> str:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["ETag"]


def publish(tmp: Path) -> tuple[dict[str, str], Path]:
    """Environment for the app, and the folder holding the published file."""
    db = tmp / "bench.db"
    build_database(db, URLS)
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "SECRET_KEY": "bench",
           "INSTANCE_PATH": str(tmp / "instance"), "SITEMAPS_DIR": str(tmp / "sitemaps"),
           "SITE_CACHE_SECONDS": "60", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "flask", "--app", "webapp", "sitemaps", "generate",
                    "shop"], env=env, check=True, cwd=ROOT, capture_output=True)
    folder = tmp / "public"  # what nginx serves: the published set, exported
    subprocess.run([sys.executable, "-m", "flask", "--app", "webapp", "sitemaps", "export",
                    "shop", str(folder)], env=env, check=True, cwd=ROOT, capture_output=True)
    return env, folder


def start_nginx(tmp: Path, folder: Path, port: int) -> subprocess.Popen:
    config = tmp / "nginx.conf"
    config.write_text(textwrap.dedent(f"""
        worker_processes 2;
        daemon off;
        pid {tmp}/nginx.pid;
        error_log {tmp}/nginx-error.log;
        events {{ worker_connections 1024; }}
        http {{
            access_log off;
            sendfile on;
            tcp_nopush on;
            types {{ application/xml xml; application/gzip gz; }}
            client_body_temp_path {tmp}/nginx-body;
            server {{
                listen 127.0.0.1:{port};
                root {folder};
                gzip_static on;
                etag on;
                add_header X-Robots-Tag noindex;
                add_header Cache-Control no-cache;
            }}
        }}
    """))
    return subprocess.Popen(["nginx", "-c", str(config), "-e", str(tmp / "nginx-error.log")])


def start_gunicorn(env: dict[str, str], port: int, threads: int,
                   app: str = "webapp:create_app()") -> subprocess.Popen:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    return subprocess.Popen(
        [str(gunicorn), "-c", "python:webapp.gunicorn_conf", "--workers", "2", "--threads",
         str(threads), "--bind", f"127.0.0.1:{port}", "--log-level", "warning", app],
        env=env, cwd=ROOT)


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM if process.args[0] != "nginx" else signal.SIGQUIT)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=4, help="threads per worker")
    args = parser.parse_args()
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (Debian: apt-get install nginx-light wrk)")
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp_name:
        tmp = Path(tmp_name)
        tmp.chmod(0o755)  # nginx workers run as an unprivileged user and must read the files
        env, folder = publish(tmp)
        size, gz_size = (folder / "sitemap.xml").stat().st_size, (folder / "sitemap.xml.gz").stat().st_size
        app_port, bare_port, nginx_port = free_port(), free_port(), free_port()
        servers = {"app": start_gunicorn(env, app_port, args.threads),
                   "bare": start_gunicorn({**env, "BARE_FOLDER": str(folder)}, bare_port,
                                          args.threads, "bench.bare_app:app"),
                   "nginx": start_nginx(tmp, folder, nginx_port)}
        urls = {"app": f"http://127.0.0.1:{app_port}/sitemaps/shop/sitemap.xml",
                "bare": f"http://127.0.0.1:{bare_port}/sitemap.xml",
                "nginx": f"http://127.0.0.1:{nginx_port}/sitemap.xml"}
        try:
            for name, url in urls.items():
                wait_until_up(url, servers[name])
            cases = {
                "gzip-encoded": lambda name: {"Accept-Encoding": "gzip"},
                "plain": lambda name: {},
                "304 (If-None-Match)": lambda name: {
                    "Accept-Encoding": "gzip",
                    "If-None-Match": etag_of(urls[name], {"Accept-Encoding": "gzip"})},
            }
            print(f"{URLS} URLs: {size} bytes, {gz_size} gzipped; wrk -t2 -c{args.connections} "
                  f"-d{args.seconds}s, median of {args.rounds} alternating rounds; gunicorn 2 "
                  f"workers (webapp/gunicorn_conf.py), {args.threads} threads each; "
                  "nginx 2 workers; bare: bench/bare_app.py under the same gunicorn")
            print(f"{'request':<22} {'app req/s':>10} {'nginx req/s':>12} {'ratio':>6}  "
                  f"{'bare req/s':>10} {'bare/nginx':>10}  errors  (app runs; bare runs; nginx runs)")
            for case, headers in cases.items():
                rates = {name: [] for name in urls}
                errors = {name: 0 for name in urls}
                for _ in range(args.rounds):
                    for name, url in urls.items():
                        rate, failed = wrk(url, args.seconds, args.connections, headers(name))
                        rates[name].append(rate)
                        errors[name] += int(failed)
                app, bare, nginx = (statistics.median(rates[name]) for name in urls)
                runs = "; ".join(" ".join(f"{r:.0f}" for r in rates[n]) for n in urls)
                print(f"{case:<22} {app:>10.0f} {nginx:>12.0f} {app / nginx:>6.2f}  "
                      f"{bare:>10.0f} {bare / nginx:>10.2f}  "
                      f"{'/'.join(str(errors[n]) for n in urls)}  ({runs})", flush=True)
        finally:
            for process in servers.values():
                stop(process)


if __name__ == "__main__":
    main()
