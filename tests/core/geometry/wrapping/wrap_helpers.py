"""Constants and analytic formulas shared by the wrapping tests."""

from __future__ import annotations

import numpy as np

RADIUS = 0.02
HEIGHT = 0.2  # long enough that paths with h/r <= 4 never reach the caps


def helix_length(r: float, h: float, dtheta: float = np.pi) -> float:
    """Geodesic on a cylinder between points dtheta apart around and h apart along the axis."""
    return float(np.hypot(r * dtheta, h))
