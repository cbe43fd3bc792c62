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
        stopping = self.alive  # the master sends TERM again each second until it has exited
        super().handle_exit(sig, frame)
        if stopping and getattr(self, "slot", None) is not None:
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

    def accept(self, listener) -> None:
        if listener.sock is not None:  # an event that came with the stop, for a closed one
            super().accept(listener)


class Slots:
    """The master's listening sockets, a slot per worker (a socket per address), each shared
    by the master and the worker that listens on it (on a reload, the old and the new one for
    a moment).

    A socket is closed with whatever the kernel had queued on it still unaccepted: those
    connections are reset. So the socket of a worker that is replaced (a reload, a crash, a
    timeout) must outlive it: the master holds every slot, a new worker takes the slot that
    fewest workers hold, and a slot is closed only when there are fewer workers than slots
    (TTOU) or gunicorn stops. A worker's `slot` is the list of its sockets.
    """

    def __init__(self, server, addresses: list[tuple]) -> None:
        self.server = server
        self.addresses = addresses
        self.slots: list[list] = []

    def add(self) -> list:
        slot = []
        try:
            for address in self.addresses:
                slot.append(self._listen(address))
        except OSError:
            for listener in slot:
                listener.close()
            raise
        self.slots.append(slot)
        self.server.LISTENERS.extend(slot)  # so that a stop closes it
        return slot

    def _listen(self, address: tuple):
        kind = gunicorn_sock._sock_type(address)
        raw = socket.socket(kind.FAMILY, socket.SOCK_STREAM)
        try:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            raw.bind(address)
        except OSError:
            raw.close()
            raise
        # gunicorn's own class listens, sets the options it sets and is what workers expect.
        return kind(address, self.server.cfg, self.server.log, fd=raw.detach())

    def _held(self, workers) -> dict[int, int]:
        """How many of `workers` listen on each slot, by the slot's id()."""
        held = {id(slot): 0 for slot in self.slots}
        for worker in workers:
            slot = id(getattr(worker, "slot", None))
            if slot in held:
                held[slot] += 1
        return held

    def assign(self, worker) -> None:
        """Give a worker about to be forked the slot that fewest workers hold, or a new one
        when there are more workers than slots (TTIN)."""
        held = self._held(list(self.server.WORKERS.values()))
        if len(self.slots) < self.server.num_workers and all(held.values()):
            try:
                worker.slot = self.add()
                return
            except OSError as error:
                self.server.log.error("No socket for one more worker (%s): it shares one", error)
        worker.slot = min(self.slots, key=lambda slot: held[id(slot)])

    def take(self, worker) -> None:
        """In the forked worker: listen on its slot, and let go of the others (a lingering
        old worker must not keep a slot open that the master has closed)."""
        worker.sockets = worker.slot
        for slot in self.slots:
            if slot is not worker.slot:
                for listener in slot:
                    listener.close()

    def shrink(self, count: int) -> None:
        """Close the slots that no worker will hold once the master has stopped the oldest
        workers beyond `count` (TTOU), but for those that workers yet to start will take.
        The stopped workers take what was queued on them as they stop."""
        workers = sorted(self.server.WORKERS.values(), key=lambda worker: worker.age)
        staying = workers[max(len(workers) - count, 0):]
        held = self._held(staying)
        empty = [slot for slot in self.slots if not held[id(slot)]]
        for slot in empty[max(count - len(staying), 0):]:
            self.slots.remove(slot)
            for listener in slot:
                listener.close()
                self.server.LISTENERS.remove(listener)
            for worker in workers:
                if getattr(worker, "slot", None) is slot:
                    worker.slot = None


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
    server.log.info("Each worker listens on its own socket (SO_REUSEPORT) at %s: %d sockets "
                    "an address, one a worker, all in gunicorn's 'Listening at'",
                    ", ".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                              for host, port in tcp), cfg.workers)


def pre_fork(server, worker) -> None:
    worker.slot = None
    if server.slots is not None:
        server.slots.assign(worker)


def post_fork(server, worker) -> None:
    if server.slots is not None:
        server.slots.take(worker)


def post_worker_init(worker) -> None:
    """The views are imported before the worker's first request, not during it; the worker
    says which settings file it read."""
    attach = getattr(worker.wsgi, "attach_views", None)
    if attach is not None:
        attach()
        worker.log.info(worker.wsgi.extensions["settings"].said())


def nworkers_changed(server, new_value, old_value) -> None:
    # Also called from the thread of gunicorn's control socket (`gunicornc worker remove`).
    if getattr(server, "slots", None) is not None and old_value and new_value < old_value:
        server.slots.shrink(new_value)


def on_reload(server) -> None:
    """The address cannot change on a reload: `--bind` is read once, at start. A config file
    that changes it makes gunicorn close every slot (they are in LISTENERS) and bind its own
    shared socket, without SO_REUSEPORT: the workers share it from then on, and the bind fails
    if the new addresses include an old one, which old workers still hold. Change the
    address with a restart."""
    if server.slots is not None and not any(
            listener.sock is not None for slot in server.slots.slots for listener in slot):
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
