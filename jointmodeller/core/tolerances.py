"""Named tolerances that several modules of the numerical core share (trimesh's ``tol`` is the model).

What lives here is a concept more than one module must agree on; a study's own defaults (an
equilibrium's force tolerance, an integrator's accuracy, a wrap iteration's convergence) stay with
the study that documents them. Values are in SI units (lengths in m, angles in rad).

Compiled kernels read these through module-level copies (numba freezes a global's value when it
compiles): after changing a value here, delete the numba cache (``__pycache__/*.nbi``, ``*.nbc``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerances:
    zero: float = 1e-12
    """Geometric zero: a normal, axis or cross product shorter than this is degenerate (its
    direction is not used)."""
    barycentric: float = 1e-9
    """A barycentric coordinate above this puts a closest point inside its triangle; at or below
    it the point is on an edge or a vertex (where the interpolated normal decides the side)."""
    rank: float = 1e-12
    """Relative pivot / singular value (``rcond``) below which a constraint row is taken as
    dependent on the others and the least-squares (minimum-norm) solution is used."""
    small_angle: float = 1e-8
    """Rotation angle [rad] below which sin θ / θ-type factors switch to their Taylor series."""


tol = Tolerances()
