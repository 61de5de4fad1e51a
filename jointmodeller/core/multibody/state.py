"""State of a multibody system: time, coordinates q (nq,), speeds u (nu,)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class State:
    """Every variable of a run; the System is constant. Copy before making a trial state."""

    t: float
    q: np.ndarray
    u: np.ndarray

    def __post_init__(self):
        self.q = np.array(self.q, float)
        self.u = np.array(self.u, float)

    def copy(self) -> "State":
        return State(self.t, self.q.copy(), self.u.copy())

    @property
    def y(self) -> np.ndarray:
        """[q; u] stacked for integrators."""
        return np.concatenate([self.q, self.u])
