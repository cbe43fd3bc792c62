"""gunicorn's settings for production: `gunicorn -c python:webapp.gunicorn_conf ...`.

`make run-prod`, the README's deployment and the benchmarks all start gunicorn with these, so
what is measured is what runs. The number of workers and the address come from the command
line (`--workers`, `--bind`).
"""

from __future__ import annotations

import errno
import socket
import sys

# Threaded workers keep crawler connections alive; a thread serves one request at a time.
worker_class = "gthread"
threads = 4
graceful_timeout = 30

# Each worker listens on a socket of its own and the kernel spreads new connections over them.
# With one socket shared by all workers, whichever worker is idle at that moment accepts, so a
# crawler's burst of keep-alive connections can all land on one worker and leave the others
# idle for as long as they stay open: bench/serve.py saw all 16 of wrk's connections on one of
# two workers in 2 runs of 6, at half the throughput. Only Linux balances SO_REUSEPORT sockets.
reuse_port = sys.platform.startswith("linux")


def on_starting(server) -> None:
    """Refuse an address that another server already listens on.

    Without SO_REUSEPORT the bind itself fails; with it, the kernel would quietly share the
    port, and a second server started by mistake (an old version, another database) would
    answer a share of the requests.
    """
    if not server.cfg.reuse_port or server.master_pid:
        return  # on a binary upgrade (USR2) the new master shares the address on purpose
    for address in server.cfg.address:
        if isinstance(address, tuple):  # TCP; unix sockets and inherited fds are not shared
            refuse_if_listened_on(address[0], address[1])
    server.log.info("Each worker listens on its own socket (SO_REUSEPORT) at %s",
                    ", ".join(f"{a[0]}:{a[1]}" for a in server.cfg.address
                              if isinstance(a, tuple)))


def refuse_if_listened_on(host: str, port: int) -> None:
    """RuntimeError (which gunicorn prints before exiting 1) when a server listens there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As gunicorn binds, less SO_REUSEPORT: connections in TIME_WAIT do not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise RuntimeError(f"{host}:{port} is already in use by another server; stop it "
                                   "or choose another address (--bind, BIND)") from None
            # Anything else (an address not on this machine) gunicorn's own bind reports.
