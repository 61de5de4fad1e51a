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
    error_time_scale: float = 0.1
    """Time [s] over which the integrators weigh a speed's error against a position's (the free-body
    system's ``error_scales``; a tree weighs speeds per second, see ``MultibodySystem.error_scales``):
    a speed error of α·L/τ moves a body by α·L in τ, so at accuracy α positions and speeds are held
    alike over the time the motion of interest takes. 0.1 s is Simbody's default time scale, the one
    its documentation gives for biomechanical simulation (``System::setDefaultTimeScale``). Weighing
    speeds over 1 s instead held the demo elbow's 123 Hz forearm twist to 1e-4 rad/s, ~1/800 of the
    position tolerance on that mode, for no gain in the motion (docs/benchmarks.md, 2026-11-29 third
    session)."""


tol = Tolerances()
