"""Live playback of streamed states (Qt-free): states arrive in bursts (one batch per integrator
step) and are shown at a steady wall-clock rate, each at most once.

Each pushed state is due 1/rate_hz after the one before it (or now, when the queue has run dry); a
draw takes the newest due state and drops the older due ones, so a slow draw skips states instead of
falling behind, and no state is ever returned twice. When more than ``max_lag_s`` of states wait,
the oldest are dropped.
"""

from __future__ import annotations

import collections
import time
from typing import Callable


class Playback:
    """A queue of (due time, state) played at ``rate_hz``; counts what it received, gave and dropped."""

    def __init__(self, rate_hz: float = 60.0, max_lag_s: float = 2.0, clock: Callable[[], float] = time.perf_counter):
        self.rate_hz = float(rate_hz)
        self.max_lag_s = float(max_lag_s)
        self.clock = clock
        self._queue: collections.deque = collections.deque()
        self._last_due = -float("inf")
        self.received = 0
        self.taken = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, states: list, now: float | None = None) -> None:
        """Queue states (oldest first), each due 1/rate_hz after the previous one."""
        now = self.clock() if now is None else now
        dt = 1.0 / self.rate_hz
        due = max(now - dt, self._last_due)
        for s in states:
            due += dt
            self._queue.append((due, s))
        self.received += len(states)
        self._last_due = due
        excess = len(self._queue) - max(1, int(self.max_lag_s * self.rate_hz))
        if excess > 0:  # too far behind: drop the oldest and play the rest from now
            for _ in range(excess):
                self._queue.popleft()
            self.dropped += excess
            shift = self._queue[0][0] - (now + dt)
            if shift > 0:
                self._queue = collections.deque((d - shift, s) for d, s in self._queue)
                self._last_due -= shift

    def next_due(self) -> float:
        """When the oldest waiting state is due (inf when none waits)."""
        return self._queue[0][0] if self._queue else float("inf")

    def take(self, now: float | None = None):
        """The newest state due by ``now`` (older due ones are dropped), or None."""
        now = self.clock() if now is None else now
        state = None
        n = 0
        while self._queue and self._queue[0][0] <= now:
            state = self._queue.popleft()[1]
            n += 1
        if state is None:
            return None
        self.dropped += n - 1
        self.taken += 1
        return state

    def clear(self) -> None:
        self.dropped += len(self._queue)
        self._queue.clear()
        self._last_due = -float("inf")


__all__ = ["Playback"]
