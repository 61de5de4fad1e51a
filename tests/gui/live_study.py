"""The scripted live study of the GUI benchmark, shared by the GUI tests: the second mass turns about z
while the study does numerical work between samples, reporting like a real dynamics run."""

import numpy as np

from jointmodeller.app.run_poses import poses_from_mesh_frames
from jointmodeller.gui.probes import turning_study

__all__ = ["TickGaps", "turning_batch", "turning_study"]


def turning_batch(project, k: int, step=None) -> dict:
    """A live batch of k distinct states (as a dynamics run streams one integrator step's dense output)
    turning the project's second mass about z by up to 0.5 rad while it rises 1 mm a state; the other
    masses stay at their mesh frames' origin. step (k,): each state's integrator step (default all 0)."""
    n = len(project.masses)
    th = np.linspace(0.0, 0.5, k)
    R = np.tile(np.eye(3), (k, n, 1, 1))
    R[:, 1] = [[[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]] for a in th]
    origin = np.zeros((k, n, 3))
    origin[:, 1, 2] = 0.11 + 0.001 * np.arange(k)
    return {"batch": True, "time": 0.01 * np.arange(1, k + 1),
            "step": np.zeros(k, int) if step is None else np.asarray(step, int),
            "poses": poses_from_mesh_frames(project, R, origin), "labels": {}}


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
