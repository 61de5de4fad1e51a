"""The one State of every system: time t [s], coordinates q (nq,), speeds u (nu,).

The System (``core.multibody.MultibodySystem``, or its all-free-bodies fast path
``core.mechanics.MechanicalSystem``) is constant once built and says what q and u mean; everything
that varies during a run is here (Simbody's System / State split, seed 003 §2).
"""

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
        """[q; u] stacked for integrators (a copy)."""
        return np.concatenate([self.q, self.u])
