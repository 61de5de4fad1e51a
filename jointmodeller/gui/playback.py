"""Live playback of streamed states (Qt-free): states arrive in bursts (one batch per integrator
step, and a step of the demo can take from a tenth of a second to seconds) and are shown at a steady
pace, each at most once.

The queue is played at a speed that spreads what waits over the time until the next batch is
expected (SPREAD × the recent interval between batches), at most ``rate_hz`` states a second, so the view keeps
moving between bursts instead of racing through a batch and standing still until the next. A draw
takes the newest state the pace has reached and drops the ones it passed, so a slow draw skips states
instead of falling behind, and no state is returned twice. When more than ``max_lag_s`` of states at
``rate_hz`` wait, the oldest are dropped.
"""

from __future__ import annotations

import collections
import time
from typing import Callable

SPREAD = 2.0
"""What waits is spread over this many recent batch intervals from the last batch: a batch up to 100 %
late still finds states to show."""


class Playback:
    """A queue of live states played at an adaptive pace; counts what it received, gave and dropped."""

    def __init__(self, rate_hz: float = 60.0, max_lag_s: float = 5.0, min_rate_hz: float = 2.0,
                 clock: Callable[[], float] = time.perf_counter):
        self.rate_hz = float(rate_hz)
        self.min_rate_hz = float(min_rate_hz)
        self.max_lag_s = float(max_lag_s)
        self.clock = clock
        self._queue: collections.deque = collections.deque()
        self._credit = 1.0  # states the pace has reached but not yet taken (the first shows at once)
        self._paced_at: float | None = None
        self._last_push: float | None = None
        self._push_gap: float | None = None  # mean interval between pushes [s]
        self.received = 0
        self.taken = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, states: list, now: float | None = None) -> None:
        """Queue states (oldest first)."""
        if not states:
            return
        now = self.clock() if now is None else now
        if self._last_push is not None:
            gap = now - self._last_push
            # up at once with a longer interval, down slowly: steps of a stiffening run grow
            self._push_gap = gap if self._push_gap is None else max(gap, 0.7 * self._push_gap + 0.3 * gap)
        self._last_push = now
        if not self._queue:
            self._paced_at = now
        self._queue.extend(states)
        self.received += len(states)
        excess = len(self._queue) - max(1, int(self.max_lag_s * self.rate_hz))
        if excess > 0:  # too far behind: drop the oldest
            for _ in range(excess):
                self._queue.popleft()
            self.dropped += excess

    def speed(self, now: float) -> float:
        """States per second the queue is played at now."""
        if not self._queue:
            return self.rate_hz
        if self._push_gap is None or self._last_push is None:
            return self.rate_hz
        ahead = max(self._last_push + SPREAD * self._push_gap - now, 1.0 / self.rate_hz)
        return min(self.rate_hz, max(self.min_rate_hz, len(self._queue) / ahead))

    def _advance(self, now: float) -> None:
        if self._paced_at is None:
            self._paced_at = now
        self._credit += max(now - self._paced_at, 0.0) * self.speed(now)
        self._paced_at = now

    def next_due(self, now: float | None = None) -> float:
        """When the pace reaches the next waiting state (inf when none waits)."""
        if not self._queue:
            return float("inf")
        now = self.clock() if now is None else now
        credit = self._credit + max(now - (self._paced_at or now), 0.0) * self.speed(now)
        return now if credit >= 1.0 else now + (1.0 - credit) / self.speed(now)

    def take(self, now: float | None = None):
        """The newest state the pace has reached (those passed are dropped), or None."""
        now = self.clock() if now is None else now
        if not self._queue:
            self._paced_at = now
            self._credit = min(self._credit, 1.0)
            return None
        self._advance(now)
        if self._credit < 1.0:
            return None
        n = min(int(self._credit), len(self._queue))
        self._credit = min(self._credit - n, 1.0)
        for _ in range(n - 1):
            self._queue.popleft()
        self.dropped += n - 1
        self.taken += 1
        return self._queue.popleft()

    def clear(self) -> None:
        self.dropped += len(self._queue)
        self._queue.clear()
        self._credit = 1.0
        self._paced_at = None


__all__ = ["Playback"]
