"""gunicorn's settings for production: `gunicorn -c python:webapp.gunicorn_conf ...`.

`make run-prod`, the README's deployment and the benchmarks all start gunicorn with these, so
what is measured is what runs. The number of workers and the address come from the command
line (`--workers`, `--bind`).
"""

from __future__ import annotations

import errno
import os
import socket
import sys

from gunicorn.workers.gthread import ThreadWorker

# Threaded workers keep crawler connections alive; a thread serves one request at a time.
worker_class = "webapp.gunicorn_conf.Worker"
threads = 4
graceful_timeout = 30

# Each worker listens on a socket of its own and the kernel spreads new connections over them.
# With one socket shared by all workers, whichever worker is idle at that moment accepts, so a
# crawler's burst of keep-alive connections can all land on one worker and leave the others
# idle for as long as they stay open: bench/serve.py saw all 16 of wrk's connections on one of
# two workers in 2 runs of 6, at half the throughput. Only Linux balances SO_REUSEPORT sockets,
# and only TCP ones (on_starting turns this off for unix sockets and systemd's sockets).
reuse_port = sys.platform.startswith("linux")


class Worker(ThreadWorker):
    """gthread, except that a stopping worker stops listening at once.

    On a reload (HUP) or a stop, a worker finishes its requests and lingers while clients
    hold kept-alive connections. With a socket of its own, the kernel would go on queueing
    new connections there all that time, to be answered late or reset when it exits.
    """

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        if self.cfg.reuse_port:
            self.method_queue.defer(self._stop_listening)  # run by the worker's main loop

    def _stop_listening(self) -> None:
        self.set_accept_enabled(False)
        for listener in self.sockets:
            while True:  # what the kernel queued here already is served, not reset
                accepted = self.nr_conns
                self.accept(listener)
                if self.nr_conns == accepted:
                    break
            listener.close()


def on_starting(server) -> None:
    """Use a socket per worker only where it works; refuse an address that cannot be used."""
    cfg = server.cfg
    if not cfg.reuse_port:
        return
    if server.master_pid:  # gunicorn re-executing itself: it fails, with no listener to pass
        raise RuntimeError("a binary upgrade (USR2) does not work with a socket per worker "
                           "(reuse_port); reload with HUP or restart instead")
    tcp = [address for address in cfg.address if isinstance(address, tuple)]
    if len(tcp) < len(cfg.address) or os.environ.get("LISTEN_FDS"):
        # A unix socket cannot be shared that way, and systemd hands over sockets of its own.
        cfg.set("reuse_port", False)
        server.log.info("One listening socket shared by the workers (unix or systemd sockets)")
        return
    for host, port in tcp:
        refuse_unusable(host, port)
    server.log.info("Each worker listens on its own socket (SO_REUSEPORT) at %s",
                    ", ".join(f"{host}:{port}" for host, port in tcp))


def refuse_unusable(host: str, port: int) -> None:
    """RuntimeError (which gunicorn prints before exiting 1) when gunicorn could not listen
    at host:port: another server listens there, or the address is not this machine's.

    Without SO_REUSEPORT gunicorn's own bind would fail at start. With it, workers bind, so
    a bad address would only make them fail and be restarted for ever, and a second server
    started by mistake would quietly share the port and answer a share of the requests.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As gunicorn binds, less SO_REUSEPORT: connections in TIME_WAIT do not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            reason = ("is already in use by another server; stop it or choose another address"
                      if error.errno == errno.EADDRINUSE else f"cannot be listened on: {error}")
            raise RuntimeError(f"{host}:{port} {reason} (--bind, BIND)") from None
