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

from gunicorn import sock as gunicorn_sock
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
# and only TCP ones: `on_starting` decides, and gunicorn's own reuse_port stays off (it would
# give each new worker a new socket, and close the old worker's with what was queued on it).
reuse_port = False
SOCKET_PER_WORKER = sys.platform.startswith("linux")


class Worker(ThreadWorker):
    """gthread, except that a stopping worker stops listening at once.

    On a reload (HUP) or a stop, a worker finishes its requests and lingers while clients
    hold kept-alive connections. It takes what the kernel queued on its socket already and
    lets go of the socket at once. On a reload the master and the new worker still hold it
    (see `Slots`): what arrives meanwhile waits there for the new worker. On a stop or TTOU
    the worker held it last: the kernel refuses new connections at once, and only one that
    arrives in the instant between the last accept and the close is reset
    (`net.ipv4.tcp_migrate_req=1` hands that one over to another worker too).
    """

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        if getattr(self, "slot", None) is not None:
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


class Slots:
    """The master's listening sockets, a slot per worker, each shared by the master and the
    worker that listens on it (on a reload, the old and the new one for a moment).

    A socket is closed with whatever the kernel had queued on it still unaccepted: those
    connections are reset. So the socket of a worker that is replaced (a reload, a crash, a
    timeout) must outlive it: the master holds every slot, a new worker takes the slot that
    fewest workers hold, and a slot is closed only when there are fewer workers than slots
    (TTOU) or gunicorn stops.
    """

    def __init__(self, server, addresses: list[tuple]) -> None:
        self.server = server
        self.addresses = addresses
        self.sockets: list[list] = []  # per slot, a socket per address

    def add(self) -> int:
        self.sockets.append([self._listen(address) for address in self.addresses])
        self.server.LISTENERS.extend(self.sockets[-1])  # so that a stop closes it
        return len(self.sockets) - 1

    def _listen(self, address: tuple):
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        raw = socket.socket(family, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        raw.bind(address)
        # gunicorn's own class listens, sets the options it sets and is what workers expect.
        return gunicorn_sock._sock_type(address)(address, self.server.cfg, self.server.log,
                                                 fd=raw.detach())

    def held(self, workers) -> list[int]:
        """How many of `workers` listen on each slot."""
        held = [0] * len(self.sockets)
        for worker in workers:
            if getattr(worker, "slot", None) is not None and worker.slot < len(held):
                held[worker.slot] += 1
        return held

    def assign(self, worker) -> None:
        """Give a worker about to be forked the slot that fewest workers hold, or a new one
        when there are more workers than slots (TTIN)."""
        held = self.held(self.server.WORKERS.values())
        if len(self.sockets) < self.server.num_workers and all(held):
            worker.slot = self.add()
        else:
            worker.slot = held.index(min(held))

    def take(self, worker) -> None:
        """In the forked worker: listen on its slot, and let go of the others (a lingering
        old worker must not keep a slot open that the master has closed)."""
        worker.sockets = self.sockets[worker.slot]
        for index, sockets in enumerate(self.sockets):
            if index != worker.slot:
                for listener in sockets:
                    listener.close()

    def shrink(self, count: int) -> None:
        """Close the slots that no worker will hold once the master has stopped the oldest
        workers beyond `count` (TTOU); their workers take what was queued as they stop."""
        workers = sorted(self.server.WORKERS.values(), key=lambda worker: worker.age)
        held = self.held(workers[max(len(workers) - count, 0):])
        for index in reversed(range(len(self.sockets))):
            if len(self.sockets) > count and not held[index]:
                for listener in self.sockets.pop(index):
                    listener.close()
                    self.server.LISTENERS.remove(listener)
                for worker in workers:
                    if getattr(worker, "slot", None) is not None and worker.slot > index:
                        worker.slot -= 1


def on_starting(server) -> None:
    """Use a socket per worker only where it works; refuse an address that cannot be used."""
    cfg = server.cfg
    server.slots = None
    if not SOCKET_PER_WORKER:
        return
    if server.master_pid:  # gunicorn re-executing itself: it fails, with no listener to pass
        raise RuntimeError("a binary upgrade (USR2) does not work with a socket per worker "
                           "(reuse_port); reload with HUP or restart instead")
    tcp = [address for address in cfg.address if isinstance(address, tuple)]
    if len(tcp) < len(cfg.address) or os.environ.get("LISTEN_FDS"):
        # A unix socket cannot be shared that way, and systemd hands over sockets of its own.
        server.log.info("One listening socket shared by the workers (unix or systemd sockets)")
        return
    for host, port in tcp:
        refuse_unusable(host, port)
    server.slots = Slots(server, tcp)
    for _ in range(cfg.workers):
        server.slots.add()
    server.log.info("Each worker listens on its own socket (SO_REUSEPORT) at %s",
                    ", ".join(f"{host}:{port}" for host, port in tcp))


def pre_fork(server, worker) -> None:
    worker.slot = None
    if server.slots is not None:
        server.slots.assign(worker)


def post_fork(server, worker) -> None:
    if server.slots is not None:
        server.slots.take(worker)


def nworkers_changed(server, new_value, old_value) -> None:
    if getattr(server, "slots", None) is not None and old_value and new_value < old_value:
        server.slots.shrink(new_value)


def on_reload(server) -> None:
    """A reload that changed the address has closed every slot (they were in LISTENERS) and
    opened gunicorn's own shared sockets: the workers share those from now on."""
    if server.slots is not None and not any(
            listener.sock is not None for sockets in server.slots.sockets
            for listener in sockets):
        server.slots = None
        server.log.info("One listening socket shared by the workers (the address changed)")


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
