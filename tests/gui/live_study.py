"""The scripted live study of the GUI benchmark, shared by the GUI tests: the second mass turns about z
while the study does numerical work between samples, reporting like a real dynamics run."""

from jointmodeller.gui.probes import turning_study

__all__ = ["TickGaps", "turning_study"]


class TickGaps:
    """A 10 ms QTimer that records the wall-clock and GUI-thread CPU time between its ticks."""

    def __init__(self, interval_ms: int = 10):
        import time

        from PySide6.QtCore import QTimer

        self._clock, self._cpu = time.perf_counter, time.thread_time
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self._last = [self._clock(), self._cpu()]
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now, now_cpu = self._clock(), self._cpu()
        self.wall.append(now - self._last[0])
        self.cpu.append(now_cpu - self._last[1])
        self._last[:] = [now, now_cpu]

    def start(self) -> None:
        self._last[:] = [self._clock(), self._cpu()]
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
