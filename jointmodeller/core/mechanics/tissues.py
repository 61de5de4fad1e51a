"""Tissue force laws: polynomial springs with Kelvin–Voigt dashpots (seed 004 §3.2, Steps 1–6).

Two models share one array layout (:class:`TissueSet`):

- ``AXIAL`` (ligament, tendon): the force acts along the current line between the two ends (or
  along a wrapped path supplied by a :class:`PathProvider`). Tension
  ``T = f(x) + c·ẋ`` with elongation ``x = L - L0`` and ``f`` from :func:`polynomial_force`.
  Tension-only tissues carry nothing while slack (``L <= L0``) and never push (``T`` clipped at 0).
- ``BUSHING``: a 3-axis spring whose frame S is fixed to body A. The relative displacement of the
  B end from the A end, expressed in S, minus its rest value gives the deflection ``x_S``; each S
  axis carries its own polynomial and dashpot (MJM eqs. 31–35). Force ``-R_GS f`` acts on body B
  at its end and ``+R_GS f`` on body A at the same point, so angular momentum is conserved.

Sign rule for even powers (documented once, used everywhere):
``f(x) = Σ_i k_i · sign(x) · |x|^i`` — odd powers are the ordinary ``x^i``; even powers resist
symmetrically, so ``f`` is an odd function of the deflection and a spring never pulls outwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from jointmodeller.core.mechanics.forces import BodyKinematics

AXIAL = 0
BUSHING = 1

POLYNOMIAL = 0
BLANKEVOORT = 1


# ---------------------------------------------------------------- polynomial laws (Steps 3–4)

def polynomial_force(deflection: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """Spring force ``Σ_i k_i sign(x)|x|^i`` for deflections x (...) and coefficients (..., n).

    ``coeffs[..., i-1]`` is k_i (units N/m^i). Shapes broadcast: deflection (m,) with coeffs
    (m, n), or deflection (m, 3) with coeffs (m, 3, n). Returns the force, shape of deflection.
    """
    x = np.asarray(deflection, dtype=float)
    k = np.asarray(coeffs, dtype=float)
    ax = np.abs(x)
    out = np.zeros(np.broadcast_shapes(x.shape, k.shape[:-1]))
    power = np.ones_like(ax)
    for i in range(k.shape[-1]):  # loop over polynomial degree, not over elements
        power = power * ax
        out = out + k[..., i] * power
    return np.sign(x) * out


def polynomial_stiffness(deflection: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """Tangent stiffness d f/d x = ``Σ_i i k_i |x|^(i-1)`` (the even-power sign rule keeps it even)."""
    x = np.asarray(deflection, dtype=float)
    k = np.asarray(coeffs, dtype=float)
    ax = np.abs(x)
    out = np.zeros(np.broadcast_shapes(x.shape, k.shape[:-1]))
    power = np.ones_like(ax)
    for i in range(k.shape[-1]):
        out = out + (i + 1) * k[..., i] * power
        power = power * ax
    return out


def polynomial_energy(deflection: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """Stored energy ``Σ_i k_i |x|^(i+1)/(i+1)`` of the spring law above (J)."""
    x = np.asarray(deflection, dtype=float)
    k = np.asarray(coeffs, dtype=float)
    ax = np.abs(x)
    out = np.zeros(np.broadcast_shapes(x.shape, k.shape[:-1]))
    power = ax.copy()
    for i in range(k.shape[-1]):
        power = power * ax
        out = out + k[..., i] * power / (i + 2)
    return out


def blankevoort_force(
    elongation: np.ndarray, rest_length: np.ndarray, stiffness: np.ndarray, transition_strain: np.ndarray
) -> np.ndarray:
    """Blankevoort (1991) ligament force (m,) [N], as OpenSim's Blankevoort1991Ligament defines it:
    zero when slack, toe ``k ε² / (2 ε_t)`` up to the transition strain ε_t, then linear
    ``k (ε − ε_t / 2)``; ε = x / L0, k in N per unit strain. Value and slope are continuous at ε_t."""
    L0 = np.asarray(rest_length, float)
    eps = np.asarray(elongation, float) / np.where(L0 > 0, L0, 1.0)
    k = np.asarray(stiffness, float)
    et = np.maximum(np.asarray(transition_strain, float), 1e-12)
    toe = 0.5 * k * eps * eps / et
    lin = k * (eps - 0.5 * et)
    return np.where(eps <= 0.0, 0.0, np.where(eps <= et, toe, lin))


def axial_tension(
    elongation: np.ndarray,
    elongation_rate: np.ndarray,
    coeffs: np.ndarray,
    damping: np.ndarray,
    tension_only: np.ndarray,
) -> np.ndarray:
    """Tension T (m,) [N] of axial tissues: spring + dashpot, slack and clipped when tension-only.

    elongation x = L - L0 (m,) [m], elongation_rate (m,) [m/s], coeffs (m, n), damping (m,) [N·s/m],
    tension_only (m,) bool. Positive T pulls the two ends together.
    """
    x = np.asarray(elongation, dtype=float)
    tension = polynomial_force(x, coeffs) + np.asarray(damping) * np.asarray(elongation_rate)
    only = np.asarray(tension_only, dtype=bool)
    clipped = np.where(x > 0.0, np.maximum(tension, 0.0), 0.0)
    return np.where(only, clipped, tension)


# ---------------------------------------------------------------- geometry (Steps 1–2)

@dataclass
class TissueGeometry:
    """Where each tissue is now, in G.

    length (m,) [m], length_rate (m,) [m/s],
    point_a_G, point_b_G (m, 3): where the tissue acts on body A and body B,
    dir_a_G, dir_b_G (m, 3): unit directions along which a positive tension pulls body A / body B.
    For a straight tissue ``dir_a_G = -dir_b_G = (point_b - point_a)/L``.
    """

    length: np.ndarray
    length_rate: np.ndarray
    point_a_G: np.ndarray
    point_b_G: np.ndarray
    dir_a_G: np.ndarray
    dir_b_G: np.ndarray


def straight_tissue_geometry(
    kin: BodyKinematics,
    body_a: np.ndarray,
    r_a_B: np.ndarray,
    body_b: np.ndarray,
    r_b_B: np.ndarray,
) -> TissueGeometry:
    """Length, length rate, end points and directions of straight tissues (m elements).

    body_a, body_b (m,) int; r_a_B, r_b_B (m, 3) end points in their body frames [m].
    """
    pa = kin.points_G(body_a, r_a_B)
    pb = kin.points_G(body_b, r_b_B)
    va = kin.point_velocities_G(body_a, r_a_B)
    vb = kin.point_velocities_G(body_b, r_b_B)
    d = pb - pa
    length = np.sqrt(np.einsum("mi,mi->m", d, d))
    safe = np.where(length > 0.0, length, 1.0)
    e = d / safe[:, None]
    rate = np.einsum("mi,mi->m", e, vb - va)
    return TissueGeometry(length, rate, pa, pb, e, -e)


@dataclass
class WrappedPath:
    """What a path provider returns for the wrapped tissues it handles (k of them).

    ``index`` (k,) rows of the TissueSet; then the fields of :class:`TissueGeometry` for those rows.
    Optional ``extra_body`` (j,), ``extra_tissue`` (j,) (position in ``index``), ``extra_point_G``
    (j, 3) and ``extra_dir_G`` (j, 3): further bodies the path presses on (a bone it wraps around),
    each pushed with force ``T * extra_dir_G`` at ``extra_point_G`` (extra_dir_G need not be unit).
    """

    index: np.ndarray
    geometry: TissueGeometry
    extra_body: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    extra_tissue: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    extra_point_G: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    extra_dir_G: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))


class PathProvider(Protocol):
    """Supplies the geometry of wrapped axial tissues (the wrapping engine implements this)."""

    def wrapped_paths(self, t: float, kin: BodyKinematics, index: np.ndarray) -> WrappedPath:
        """Geometry of the tissues ``index`` (k,) at this pose and velocity."""
        ...


class CombinedPathProvider:
    """One PathProvider made of several, each serving its own rows (mesh wrapping for some tissues,
    via points and analytic wrap objects for others)."""

    def __init__(self, parts: list[tuple[np.ndarray, PathProvider]]):
        self.parts = [(np.asarray(rows, np.int64), provider) for rows, provider in parts]

    def free_lines(self, kin: BodyKinematics, index: np.ndarray) -> np.ndarray:
        """(k,) bool: the rows of ``index`` a part certifies as free straight lines at this pose (parts
        without ``free_lines`` certify none); see ``WrappingPathProvider.free_lines``."""
        index = np.asarray(index, np.int64)
        mask = np.zeros(len(index), dtype=bool)
        for rows, provider in self.parts:
            mine = np.flatnonzero(np.isin(index, rows))
            if len(mine) and hasattr(provider, "free_lines"):
                mask[mine] = provider.free_lines(kin, index[mine])
        return mask

    def wrapped_paths(self, t: float, kin: BodyKinematics, index: np.ndarray) -> WrappedPath:
        index = np.asarray(index, np.int64)
        outs = [provider.wrapped_paths(t, kin, index[np.isin(index, rows)])
                for rows, provider in self.parts if np.isin(index, rows).any()]
        if len(outs) == 1:
            return outs[0]
        if not outs:
            z = np.zeros((0, 3))
            return WrappedPath(index[:0], TissueGeometry(np.zeros(0), np.zeros(0), z, z, z, z))
        offsets = np.cumsum([0] + [len(o.index) for o in outs[:-1]])
        cat = np.concatenate
        geo = TissueGeometry(*(cat([getattr(o.geometry, f) for o in outs]) for f in
                               ("length", "length_rate", "point_a_G", "point_b_G", "dir_a_G", "dir_b_G")))
        return WrappedPath(cat([o.index for o in outs]), geo, cat([o.extra_body for o in outs]),
                           cat([o.extra_tissue + off for o, off in zip(outs, offsets)]),
                           cat([o.extra_point_G for o in outs]), cat([o.extra_dir_G for o in outs]))


# ---------------------------------------------------------------- the compiled tissue arrays

@dataclass
class TissueSet:
    """All tissue elements as arrays (m elements, polynomial degree n padded with zeros).

    body_a, body_b (m,) int          bodies of the two ends
    r_a_B, r_b_B (m, 3)              end points in the body frames [m]
    coeffs (m, 3, n)                 k1..kn per spring axis (axial uses axis 0) [N/m^i]
    damping (m, 3)                   dashpot per axis [N·s/m]
    tension_only (m,) bool           slack when shorter than rest length (axial only)
    rest_length (m,)                 L0 [m] (axial)
    model (m,) int                   AXIAL or BUSHING
    R_AS (m, 3, 3)                   spring frame S in body A's frame (bushing)
    rest_S (m, 3)                    rest vector from A end to B end in S (bushing) [m]
    wrapped (m,) bool                geometry from the path provider instead of a straight line
    names                            one label per element
    law (m,) int                     POLYNOMIAL, or BLANKEVOORT (axial; k = coeffs[:, 0, 0] per
                                     unit strain, toe up to transition_strain)
    transition_strain (m,)           Blankevoort ε_t (OpenSim's transition strain)
    """

    body_a: np.ndarray
    body_b: np.ndarray
    r_a_B: np.ndarray
    r_b_B: np.ndarray
    coeffs: np.ndarray
    damping: np.ndarray
    tension_only: np.ndarray
    rest_length: np.ndarray
    model: np.ndarray
    R_AS: np.ndarray
    rest_S: np.ndarray
    wrapped: np.ndarray
    names: list[str]
    law: np.ndarray
    transition_strain: np.ndarray

    @property
    def count(self) -> int:
        return int(self.body_a.shape[0])

    @classmethod
    def empty(cls, degree: int = 1) -> "TissueSet":
        return make_tissue_set([], [], np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3, degree)))


def make_tissue_set(
    body_a,
    body_b,
    r_a_B,
    r_b_B,
    coeffs,
    damping=None,
    tension_only=None,
    rest_length=None,
    model=None,
    R_AS=None,
    rest_S=None,
    wrapped=None,
    names=None,
    law=None,
    transition_strain=None,
) -> TissueSet:
    """Build a :class:`TissueSet` from array-likes, filling defaults (axial, not wrapped, ...).

    coeffs may be (m, n) (axial: axis 0 only) or (m, 3, n).
    """
    body_a = np.asarray(body_a, dtype=np.int64).reshape(-1)
    m = body_a.shape[0]
    body_b = np.asarray(body_b, dtype=np.int64).reshape(m)
    r_a_B = np.asarray(r_a_B, dtype=float).reshape(m, 3)
    r_b_B = np.asarray(r_b_B, dtype=float).reshape(m, 3)
    k = np.asarray(coeffs, dtype=float)
    if k.ndim == 2:
        full = np.zeros((m, 3, k.shape[1]))
        full[:, 0, :] = k
        k = full
    k = k.reshape(m, 3, k.shape[-1])
    if damping is None:
        damping = np.zeros((m, 3))
    damping = np.asarray(damping, dtype=float)
    if damping.ndim == 1:
        d3 = np.zeros((m, 3))
        d3[:, 0] = damping
        damping = d3
    return TissueSet(
        body_a=body_a,
        body_b=body_b,
        r_a_B=r_a_B,
        r_b_B=r_b_B,
        coeffs=np.ascontiguousarray(k),
        damping=np.ascontiguousarray(damping.reshape(m, 3)),
        tension_only=np.zeros(m, bool) if tension_only is None else np.asarray(tension_only, bool).reshape(m),
        rest_length=np.zeros(m) if rest_length is None else np.asarray(rest_length, float).reshape(m),
        model=np.full(m, AXIAL, np.int64) if model is None else np.asarray(model, np.int64).reshape(m),
        R_AS=np.tile(np.eye(3), (m, 1, 1)) if R_AS is None else np.asarray(R_AS, float).reshape(m, 3, 3),
        rest_S=np.zeros((m, 3)) if rest_S is None else np.asarray(rest_S, float).reshape(m, 3),
        wrapped=np.zeros(m, bool) if wrapped is None else np.asarray(wrapped, bool).reshape(m),
        names=[f"tissue {i + 1}" for i in range(m)] if names is None else list(names),
        law=np.zeros(m, np.int64) if law is None else np.asarray(law, np.int64).reshape(m),
        transition_strain=(np.full(m, 0.06) if transition_strain is None
                           else np.asarray(transition_strain, float).reshape(m)),
    )
