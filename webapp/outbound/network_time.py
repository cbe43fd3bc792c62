"""A request's deadline on an asyncio loop, counted on the network's time: the loop runs the
reading of pages too (verification's crawler), and a page that holds it for seconds must not
use up the deadlines of the requests whose answers arrived meanwhile, which would be recorded
as "no answer" although their servers had answered."""

from __future__ import annotations

import asyncio


class Held:
    """How long the loop was held by work on its thread (a page being read): a tick every
    TICK seconds, and how late each came. A request's deadline is the network's time: the
    time the loop could not read an answer that had arrived is not counted against it."""

    TICK = 0.05

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop, self.seconds = loop, 0.0
        self._due = loop.time() + self.TICK
        self._handle = loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        now = self.loop.time()
        self.seconds += max(0.0, now - self._due)
        self._due = now + self.TICK
        self._handle = self.loop.call_at(self._due, self._tick)

    def so_far(self) -> float:
        """Seconds held until now, a hold that has just ended included."""
        return self.seconds + max(0.0, self.loop.time() - self._due)

    def stop(self) -> None:
        self._handle.cancel()


class Deadline:
    """`seconds` of a request, the loop's held time not counted: when they are up, the
    request's `asyncio.timeout` is made to expire (its TimeoutError is the deadline's)."""

    def __init__(self, held: Held, timeout: asyncio.Timeout, seconds: float):
        self.held, self.timeout = held, timeout
        self.ends, self.counted = held.loop.time() + seconds, held.so_far()
        self._handle = held.loop.call_at(self.ends, self._due)

    def _due(self) -> None:
        late = self.held.so_far() - self.counted
        if late >= Held.TICK:  # the loop was held meanwhile: that time is given back
            self.counted += late
            self.ends += late
            self._handle = self.held.loop.call_at(self.ends, self._due)
        else:
            self.timeout.reschedule(self.held.loop.time())

    def cancel(self) -> None:
        self._handle.cancel()
