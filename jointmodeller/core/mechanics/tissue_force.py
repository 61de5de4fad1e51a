"""The tissue force element: MJM Steps 1–5 for every tissue at once (seed 004 §3.2).

Steps: (1) attachment points and their velocities in G; (2) relative displacement of the two ends;
(3) into each spring's frame (the tissue line for axial, S for bushings); (4) polynomial force plus
dashpot in that frame; (5) back to G, applied at the attachment points (moments ``r × F`` about each
centre of mass). Step 6 (integration) lives in :mod:`jointmodeller.core.multibody.integrate`.

Straight tissues go through a numba kernel unless numba is switched off (``core._jit``) and through
the numpy code otherwise (both are tested against each other); wrapped tissues get their geometry from a
:class:`~jointmodeller.core.mechanics.tissues.PathProvider` and use the numpy code.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from jointmodeller.core._jit import kernel, numba_enabled
from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces
from jointmodeller.core.mechanics.tissues import (
    AXIAL,
    BLANKEVOORT,
    BUSHING,
    PathProvider,
    TissueGeometry,
    TissueSet,
    WrappedPath,
    axial_tension,
    blankevoort_force,
    polynomial_energy,
    polynomial_force,
    straight_tissue_geometry,
)


@dataclass
class TissueLoads:
    """Result of evaluating every tissue (m) at one state.

    length (m,) [m]: current length (axial) or |current end-to-end vector| (bushing)
    length_rate (m,) [m/s]
    elongation (m,) [m]: L - L0 (axial) or |x_S| (bushing)
    tension (m,) [N]: axial tension (positive pulls) or |f_S| (bushing)
    deflection_S (m, 3) [m]: bushing deflection in S (zeros for axial)
    force_S (m, 3) [N]: force in the spring frame (axial: (T, 0, 0))
    body, point_G, force_G: point forces (j,), (j, 3), (j, 3) the tissues apply to the bodies
    """

    length: np.ndarray
    length_rate: np.ndarray
    elongation: np.ndarray
    tension: np.ndarray
    deflection_S: np.ndarray
    force_S: np.ndarray
    body: np.ndarray
    point_G: np.ndarray
    force_G: np.ndarray


def _bushing_terms(kin: BodyKinematics, ts: TissueSet, idx: np.ndarray):
    """Deflection, rate and force of bushings ``idx`` (k,): returns x_S, xdot_S, f_S, F_G, pa, pb."""
    a, b = ts.body_a[idx], ts.body_b[idx]
    pa = kin.points_G(a, ts.r_a_B[idx])
    pb = kin.points_G(b, ts.r_b_B[idx])
    va = kin.point_velocities_G(a, ts.r_a_B[idx])
    vb = kin.point_velocities_G(b, ts.r_b_B[idx])
    R_GS = np.einsum("kij,kjl->kil", kin.R_GB[a], ts.R_AS[idx])
    d = pb - pa
    d_rate = vb - va - np.cross(kin.w_G[a], d)
    x_S = np.einsum("kji,kj->ki", R_GS, d) - ts.rest_S[idx]
    xdot_S = np.einsum("kji,kj->ki", R_GS, d_rate)
    f_S = polynomial_force(x_S, ts.coeffs[idx]) + ts.damping[idx] * xdot_S
    F_G = np.einsum("kij,kj->ki", R_GS, f_S)
    return x_S, xdot_S, f_S, F_G, pa, pb


def evaluate_tissues(
    t: float, kin: BodyKinematics, ts: TissueSet, provider: PathProvider | None = None
) -> TissueLoads:
    """Evaluate all tissues with numpy (the reference implementation; vectorised, no element loop)."""
    m = ts.count
    length = np.zeros(m)
    rate = np.zeros(m)
    elong = np.zeros(m)
    tension = np.zeros(m)
    defl_S = np.zeros((m, 3))
    force_S = np.zeros((m, 3))
    bodies, points, forces = [], [], []

    axial = np.flatnonzero(ts.model == AXIAL)
    if axial.size:
        straight = axial[~ts.wrapped[axial]]
        wrapped = axial[ts.wrapped[axial]]
        geos: list[tuple[np.ndarray, TissueGeometry]] = []
        if straight.size:
            geos.append(
                (straight, straight_tissue_geometry(kin, ts.body_a[straight], ts.r_a_B[straight],
                                                    ts.body_b[straight], ts.r_b_B[straight]))
            )
        path: WrappedPath | None = None
        if wrapped.size:
            if provider is None:
                raise ValueError("wrapped tissues need a path provider")
            path = provider.wrapped_paths(t, kin, wrapped)
            geos.append((np.asarray(path.index, dtype=np.int64), path.geometry))
        for idx, g in geos:
            x = g.length - ts.rest_length[idx]
            T = axial_tension(x, g.length_rate, ts.coeffs[idx, 0], ts.damping[idx, 0], ts.tension_only[idx])
            bl = ts.law[idx] == BLANKEVOORT
            if bl.any():  # Blankevoort ligaments: always tension-only
                f = blankevoort_force(x[bl], ts.rest_length[idx][bl], ts.coeffs[idx[bl], 0, 0],
                                      ts.transition_strain[idx[bl]])
                T_bl = f + ts.damping[idx[bl], 0] * g.length_rate[bl]
                T[bl] = np.where(x[bl] > 0, np.maximum(T_bl, 0.0), 0.0)
            length[idx], rate[idx], elong[idx], tension[idx] = g.length, g.length_rate, x, T
            force_S[idx, 0] = T
            bodies += [ts.body_a[idx], ts.body_b[idx]]
            points += [g.point_a_G, g.point_b_G]
            forces += [T[:, None] * g.dir_a_G, T[:, None] * g.dir_b_G]
        if path is not None and path.extra_body.size:
            pos = np.asarray(path.extra_tissue, dtype=np.int64)
            T_extra = tension[np.asarray(path.index)[pos]]
            bodies.append(np.asarray(path.extra_body, dtype=np.int64))
            points.append(path.extra_point_G)
            forces.append(T_extra[:, None] * path.extra_dir_G)

    bush = np.flatnonzero(ts.model == BUSHING)
    if bush.size:
        x_S, xdot_S, f_S, F_G, pa, pb = _bushing_terms(kin, ts, bush)
        d = pb - pa
        length[bush] = np.linalg.norm(d, axis=1)
        rate[bush] = np.einsum("ki,ki->k", d, kin.point_velocities_G(ts.body_b[bush], ts.r_b_B[bush])
                               - kin.point_velocities_G(ts.body_a[bush], ts.r_a_B[bush])) / np.where(
            length[bush] > 0, length[bush], 1.0)
        elong[bush] = np.linalg.norm(x_S, axis=1)
        tension[bush] = np.linalg.norm(f_S, axis=1)
        defl_S[bush] = x_S
        force_S[bush] = f_S
        # both forces act at the B end so the pair carries no net moment (angular momentum kept)
        bodies += [ts.body_a[bush], ts.body_b[bush]]
        points += [pb, pb]
        forces += [F_G, -F_G]

    if bodies:
        body = np.concatenate(bodies)
        point_G = np.concatenate(points)
        force_G = np.concatenate(forces)
    else:
        body, point_G, force_G = np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3))
    return TissueLoads(length, rate, elong, tension, defl_S, force_S, body, point_G, force_G)


def tissue_energy(kin: BodyKinematics, ts: TissueSet, provider: PathProvider | None = None, t: float = 0.0) -> float:
    """Elastic energy stored in all tissues [J] (dashpots excluded)."""
    loads = evaluate_tissues(t, kin, replace(ts, damping=np.zeros_like(ts.damping)), provider)
    axial = ts.model == AXIAL
    x = loads.elongation
    e_ax = polynomial_energy(x, ts.coeffs[:, 0])
    e_ax = np.where(ts.tension_only & (x <= 0), 0.0, e_ax)
    if (ts.law == BLANKEVOORT).any():  # integrate the Blankevoort law numerically (rare, small)
        s = np.linspace(0.0, 1.0, 65)[None, :]
        f = blankevoort_force((x[:, None] * s).ravel(), np.repeat(ts.rest_length, 65),
                              np.repeat(ts.coeffs[:, 0, 0], 65), np.repeat(ts.transition_strain, 65)).reshape(-1, 65)
        e_bl = np.trapezoid(f, x[:, None] * s, axis=1)
        e_ax = np.where(ts.law == BLANKEVOORT, e_bl, e_ax)
    e_bu = polynomial_energy(loads.deflection_S, ts.coeffs).sum(axis=1)
    return float(np.sum(np.where(axial, e_ax, e_bu)))


# ---------------------------------------------------------------- numba kernel (straight tissues)

def _kernel_py(p_G, R_GB, v_G, w_G, body_a, body_b, r_a_B, r_b_B, coeffs, damping, tension_only,
               rest_length, model, R_AS, rest_S, active, force_G, torque_G, out_len, out_rate, out_elong,
               out_tension, out_defl, out_fS):  # pragma: no cover - compiled by numba
    """Straight tissues only (``active``): same laws as :func:`evaluate_tissues`, accumulated in place."""
    m = body_a.shape[0]
    nk = coeffs.shape[2]
    for e in range(m):
        if not active[e]:
            continue
        ia = body_a[e]
        ib = body_b[e]
        arm_a = np.empty(3)
        arm_b = np.empty(3)
        pa = np.empty(3)
        pb = np.empty(3)
        va = np.empty(3)
        vb = np.empty(3)
        for i in range(3):
            arm_a[i] = R_GB[ia, i, 0] * r_a_B[e, 0] + R_GB[ia, i, 1] * r_a_B[e, 1] + R_GB[ia, i, 2] * r_a_B[e, 2]
            arm_b[i] = R_GB[ib, i, 0] * r_b_B[e, 0] + R_GB[ib, i, 1] * r_b_B[e, 1] + R_GB[ib, i, 2] * r_b_B[e, 2]
        for i in range(3):
            pa[i] = p_G[ia, i] + arm_a[i]
            pb[i] = p_G[ib, i] + arm_b[i]
        va[0] = v_G[ia, 0] + w_G[ia, 1] * arm_a[2] - w_G[ia, 2] * arm_a[1]
        va[1] = v_G[ia, 1] + w_G[ia, 2] * arm_a[0] - w_G[ia, 0] * arm_a[2]
        va[2] = v_G[ia, 2] + w_G[ia, 0] * arm_a[1] - w_G[ia, 1] * arm_a[0]
        vb[0] = v_G[ib, 0] + w_G[ib, 1] * arm_b[2] - w_G[ib, 2] * arm_b[1]
        vb[1] = v_G[ib, 1] + w_G[ib, 2] * arm_b[0] - w_G[ib, 0] * arm_b[2]
        vb[2] = v_G[ib, 2] + w_G[ib, 0] * arm_b[1] - w_G[ib, 1] * arm_b[0]
        d0 = pb[0] - pa[0]
        d1 = pb[1] - pa[1]
        d2 = pb[2] - pa[2]
        dv0 = vb[0] - va[0]
        dv1 = vb[1] - va[1]
        dv2 = vb[2] - va[2]
        L = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        Ls = L if L > 0.0 else 1.0
        Ldot = (d0 * dv0 + d1 * dv1 + d2 * dv2) / Ls
        out_len[e] = L
        out_rate[e] = Ldot
        F = np.zeros(3)
        app = pa  # application point on body A
        if model[e] == 0:
            x = L - rest_length[e]
            ax = abs(x)
            s = 0.0
            pw = 1.0
            for k in range(nk):
                pw *= ax
                s += coeffs[e, 0, k] * pw
            if x < 0.0:
                s = -s
            elif x == 0.0:
                s = 0.0
            T = s + damping[e, 0] * Ldot
            if tension_only[e]:
                if x <= 0.0:
                    T = 0.0
                elif T < 0.0:
                    T = 0.0
            out_elong[e] = x
            out_tension[e] = T
            out_fS[e, 0] = T
            out_fS[e, 1] = 0.0
            out_fS[e, 2] = 0.0
            F[0] = T * d0 / Ls
            F[1] = T * d1 / Ls
            F[2] = T * d2 / Ls
        else:
            # R_GS = R_GA R_AS; x_S = R_SG d - rest; xdot_S = R_SG (dv - w_A x d)
            wa0 = w_G[ia, 0]
            wa1 = w_G[ia, 1]
            wa2 = w_G[ia, 2]
            r0 = dv0 - (wa1 * d2 - wa2 * d1)
            r1 = dv1 - (wa2 * d0 - wa0 * d2)
            r2 = dv2 - (wa0 * d1 - wa1 * d0)
            R_GS = np.empty((3, 3))
            for i in range(3):
                for j in range(3):
                    R_GS[i, j] = (R_GB[ia, i, 0] * R_AS[e, 0, j] + R_GB[ia, i, 1] * R_AS[e, 1, j]
                                  + R_GB[ia, i, 2] * R_AS[e, 2, j])
            fS = np.empty(3)
            xn = 0.0
            fn = 0.0
            for j in range(3):
                xs = R_GS[0, j] * d0 + R_GS[1, j] * d1 + R_GS[2, j] * d2 - rest_S[e, j]
                xds = R_GS[0, j] * r0 + R_GS[1, j] * r1 + R_GS[2, j] * r2
                ax = abs(xs)
                s = 0.0
                pw = 1.0
                for k in range(nk):
                    pw *= ax
                    s += coeffs[e, j, k] * pw
                if xs < 0.0:
                    s = -s
                elif xs == 0.0:
                    s = 0.0
                fS[j] = s + damping[e, j] * xds
                out_defl[e, j] = xs
                out_fS[e, j] = fS[j]
                xn += xs * xs
                fn += fS[j] * fS[j]
            out_elong[e] = np.sqrt(xn)
            out_tension[e] = np.sqrt(fn)
            for i in range(3):
                F[i] = R_GS[i, 0] * fS[0] + R_GS[i, 1] * fS[1] + R_GS[i, 2] * fS[2]
            app = pb
        # +F on A at app, -F on B at pb; moments about each centre of mass
        ca0 = app[0] - p_G[ia, 0]
        ca1 = app[1] - p_G[ia, 1]
        ca2 = app[2] - p_G[ia, 2]
        force_G[ia, 0] += F[0]
        force_G[ia, 1] += F[1]
        force_G[ia, 2] += F[2]
        torque_G[ia, 0] += ca1 * F[2] - ca2 * F[1]
        torque_G[ia, 1] += ca2 * F[0] - ca0 * F[2]
        torque_G[ia, 2] += ca0 * F[1] - ca1 * F[0]
        force_G[ib, 0] -= F[0]
        force_G[ib, 1] -= F[1]
        force_G[ib, 2] -= F[2]
        torque_G[ib, 0] -= arm_b[1] * F[2] - arm_b[2] * F[1]
        torque_G[ib, 1] -= arm_b[2] * F[0] - arm_b[0] * F[2]
        torque_G[ib, 2] -= arm_b[0] * F[1] - arm_b[1] * F[0]


_kernel = None


def _get_kernel():
    """The kernel compiled on first use (a second or two, cached on disk by numba)."""
    global _kernel
    if _kernel is None:
        _kernel = kernel(_kernel_py, True, fastmath=False)
    return _kernel


class TissueForces:
    """Force element for a :class:`TissueSet` (implements ``ForceElement``).

    ``use_numba=None`` picks the numba kernel unless the ``core._jit`` switch is off
    (JOINTMODELLER_NUMBA=0); ``False`` forces the numpy path. Wrapped tissues use the numpy path and
    ``provider``, except where the provider certifies their path the straight line between their
    attachments at this pose (``free_lines``): those go through the kernel as straight tissues.
    """

    def __init__(self, tissues: TissueSet, provider: PathProvider | None = None, use_numba: bool | None = None):
        self.tissues = tissues
        self.provider = provider
        self.use_numba = numba_enabled(use_numba)
        # the compiled kernel handles straight polynomial tissues; the rest use the numpy path
        self._straight = (~tissues.wrapped | (tissues.model == BUSHING)) & (tissues.law != BLANKEVOORT)
        # wrapped polynomial tissues: straight ones (the kernel's) at a pose where the provider certifies
        # their path a free line (``free_lines``), as most are most of the time
        self._maybe_straight = np.flatnonzero(tissues.wrapped & (tissues.model == AXIAL)
                                              & (tissues.law != BLANKEVOORT))
        m = tissues.count
        self._buf = {
            "len": np.zeros(m), "rate": np.zeros(m), "elong": np.zeros(m), "tension": np.zeros(m),
            "defl": np.zeros((m, 3)), "fS": np.zeros((m, 3)),
        }
        if tissues.wrapped.any() and provider is None:
            raise ValueError("tissues marked wrapped need a path provider")

    def evaluate(self, t: float, kin: BodyKinematics) -> TissueLoads:
        """Per-tissue lengths, tensions and the point forces (numpy reference path)."""
        return evaluate_tissues(t, kin, self.tissues, self.provider)

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        ts = self.tissues
        if ts.count == 0:
            return
        if not self.use_numba:
            loads = evaluate_tissues(t, kin, ts, self.provider)
            apply_point_forces(kin, loads.body, loads.point_G, loads.force_G, force_G, torque_G)
            return
        b = self._buf
        active = self._straight
        free_lines = getattr(self.provider, "free_lines", None)
        if free_lines is not None and self._maybe_straight.size:
            free = free_lines(kin, self._maybe_straight)
            if free.any():
                active = self._straight.copy()
                active[self._maybe_straight[free]] = True
        _get_kernel()(
            kin.p_G, kin.R_GB, kin.v_G, kin.w_G, ts.body_a, ts.body_b, ts.r_a_B, ts.r_b_B, ts.coeffs,
            ts.damping, ts.tension_only, ts.rest_length, ts.model, ts.R_AS, ts.rest_S, active,
            force_G, torque_G, b["len"], b["rate"], b["elong"], b["tension"], b["defl"], b["fS"],
        )
        if not active.all():
            sub = np.flatnonzero(~active)
            prov = _ReindexedProvider(self.provider, sub) if self.provider is not None else None
            loads = evaluate_tissues(t, kin, _subset(ts, sub), prov)
            apply_point_forces(kin, loads.body, loads.point_G, loads.force_G, force_G, torque_G)

    def energy(self, t: float, kin: BodyKinematics) -> float:
        """Elastic energy stored in the tissues [J]."""
        return tissue_energy(kin, self.tissues, self.provider, t)

    def _tangents(self, t: float, kin: BodyKinematics, damping: bool, length_scale: float = 0.1):
        from jointmodeller.core.mechanics.linearization import finite_difference_stiffness, tissue_tangents

        straight = np.flatnonzero(self._straight)
        K, C = tissue_tangents(kin, self.tissues, straight)
        if straight.size < self.tissues.count:  # wrapped paths, Blankevoort: differentiate numerically
            sub = np.flatnonzero(~self._straight)
            prov = _ReindexedProvider(self.provider, sub) if self.provider is not None else None
            part = TissueForces(_subset(self.tissues, sub), prov, use_numba=False)
            moving = _moving_dofs(kin.n_bodies, self.tissues, sub)
            if damping:
                C += finite_difference_stiffness([part], t, kin, length_scale, velocity=True, dofs=moving)
            else:
                K += finite_difference_stiffness([part], t, kin, length_scale, dofs=moving)
        return K, C

    def tangent_stiffness(self, t: float, kin: BodyKinematics) -> np.ndarray:
        """K = -∂(force, moment)/∂(δp_G, δθ_G) (6n, 6n), exact at rest (see linearization)."""
        return self._tangents(t, kin, damping=False)[0]

    def tangent_damping(self, t: float, kin: BodyKinematics) -> np.ndarray:
        """C = -∂(force, moment)/∂(v_G, w_G) (6n, 6n)."""
        return self._tangents(t, kin, damping=True)[1]


def _moving_dofs(n: int, ts: TissueSet, rows: np.ndarray) -> np.ndarray:
    """DOFs (6 per body) of the bodies the tissues ``rows`` touch (wrapping over a third bone is
    covered because every body that carries an obstacle is then listed by the path provider as an
    end or an extra body; to stay safe all bodies are differentiated when there are three or more)."""
    if n >= 3:
        return np.arange(6 * n)
    bodies = np.unique(np.r_[ts.body_a[rows], ts.body_b[rows]])
    return (6 * bodies[:, None] + np.arange(6)).ravel()


def _subset(ts: TissueSet, idx: np.ndarray) -> TissueSet:
    """The rows ``idx`` of a tissue set."""
    fields: dict[str, Any] = {}
    for key, val in ts.__dict__.items():
        fields[key] = [val[i] for i in idx] if key == "names" else val[idx]
    return TissueSet(**fields)


class _ReindexedProvider:
    """Maps subset rows back to the full set's rows for the path provider."""

    def __init__(self, provider: PathProvider, rows: np.ndarray):
        self.provider, self.rows = provider, rows
        self.lookup = {int(r): i for i, r in enumerate(rows)}

    def wrapped_paths(self, t: float, kin: BodyKinematics, index: np.ndarray) -> WrappedPath:
        path = self.provider.wrapped_paths(t, kin, self.rows[index])
        local = np.array([self.lookup[int(r)] for r in path.index], dtype=np.int64)
        return WrappedPath(local, path.geometry, path.extra_body, path.extra_tissue, path.extra_point_G,
                           path.extra_dir_G)
