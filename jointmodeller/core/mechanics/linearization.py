"""Tangent stiffness and damping of force elements: the small-motion model of seed 004 §3.1.

Each body i has six small-motion coordinates ``[δp_G (3), δθ_G (3)]`` (a translation of the centre
of mass and a small rotation vector, both in G; MJM eqs. 1–5: ``d = x + θ × r``). For a point on
the body with arm ``a = P - p`` its displacement is ``δP = A δq`` with ``A = [I, -[a×]]`` and a
force f there gives the generalised force ``A^T f = [f; a × f]`` (eqs. 6–9). The stiffness
``K = -∂g/∂q`` (6n × 6n) assembles each tissue's 3×3 spring matrix in G (eqs. 13–22) and adds the
geometric terms of forces that rotate with the bodies (tension across a turning line, moment arms
that turn), so K is the exact tangent of the nonlinear force evaluation and serves as the Newton
Jacobian of static equilibrium. ``C = -∂g/∂u`` with u = [v_G, w_G] has the same structure with
damping coefficients.

Elements may provide ``tangent_stiffness(t, kin)`` / ``tangent_damping(t, kin)``; for any other
ForceElement :func:`finite_difference_stiffness` differentiates ``accumulate`` numerically.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.tissues import (
    AXIAL,
    BUSHING,
    TissueSet,
    polynomial_force,
    polynomial_stiffness,
    straight_tissue_geometry,
)
from jointmodeller.core.spatial_math import quat_to_matrix, rotvec_to_quat, skew

FD_STEP_LENGTH = 1e-6  # relative to the model length scale, for translations
FD_STEP_ANGLE = 1e-6  # rad, for rotations


def _scatter(out: np.ndarray, body_a: np.ndarray, body_b: np.ndarray, blocks: np.ndarray) -> None:
    """Add per-element 12×12 blocks (m, 12, 12) over DOFs [6a..6a+6, 6b..6b+6] into out (6n, 6n)."""
    idx = np.concatenate([6 * body_a[:, None] + np.arange(6), 6 * body_b[:, None] + np.arange(6)], axis=1)
    np.add.at(out, (idx[:, :, None], idx[:, None, :]), blocks)


def _relative_map(arm_a: np.ndarray, arm_b: np.ndarray) -> np.ndarray:
    """D (m, 3, 12): δ(P_b - P_a) = D [δq_a; δq_b]."""
    m = arm_a.shape[0]
    D = np.zeros((m, 3, 12))
    D[:, :, 0:3] = -np.eye(3)
    D[:, :, 3:6] = skew(arm_a)
    D[:, :, 6:9] = np.eye(3)
    D[:, :, 9:12] = -skew(arm_b)
    return D


def tissue_tangents(kin: BodyKinematics, ts: TissueSet,
                    rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Analytic K and C (6n, 6n) of straight tissues ``rows`` (default: all) at this state."""
    n = kin.n_bodies
    K = np.zeros((6 * n, 6 * n))
    C = np.zeros((6 * n, 6 * n))
    rows = np.arange(ts.count) if rows is None else np.asarray(rows)
    eye = np.eye(3)

    ax = rows[ts.model[rows] == AXIAL]
    if ax.size:
        a, b = ts.body_a[ax], ts.body_b[ax]
        g = straight_tissue_geometry(kin, a, ts.r_a_B[ax], b, ts.r_b_B[ax])
        arm_a = g.point_a_G - kin.p_G[a]
        arm_b = g.point_b_G - kin.p_G[b]
        x = g.length - ts.rest_length[ax]
        c = ts.damping[ax, 0]
        T = polynomial_force(x, ts.coeffs[ax, 0]) + c * g.length_rate
        kt = polynomial_stiffness(x, ts.coeffs[ax, 0])
        only = ts.tension_only[ax]
        active = ~only | ((x > 0) & (T > 0))
        T = np.where(active, T, 0.0)
        kt = np.where(active, kt, 0.0)
        c = np.where(active, c, 0.0)
        e = g.dir_a_G
        ee = e[:, :, None] * e[:, None, :]
        L = np.where(g.length > 0, g.length, 1.0)
        Kp = kt[:, None, None] * ee + (T / L)[:, None, None] * (eye - ee)
        Cp = c[:, None, None] * ee
        D = _relative_map(arm_a, arm_b)
        f_a = T[:, None] * e
        # rows of A: [I; [a_a×]] · (Kp D); rows of B: -[I; [a_b×]] · (Kp D)
        Ha = np.concatenate([np.broadcast_to(eye, arm_a.shape + (3,)), skew(arm_a)], axis=1)  # (m, 6, 3)
        Hb = np.concatenate([np.broadcast_to(eye, arm_b.shape + (3,)), skew(arm_b)], axis=1)
        KD = Kp @ D
        CD = Cp @ D
        J = np.concatenate([Ha @ KD, -(Hb @ KD)], axis=1)  # (m, 12, 12) = dg/dq
        J[:, 3:6, 3:6] += skew(f_a) @ skew(arm_a)
        J[:, 9:12, 9:12] += skew(-f_a) @ skew(arm_b)
        _scatter(K, a, b, -J)
        _scatter(C, a, b, -np.concatenate([Ha @ CD, -(Hb @ CD)], axis=1))

    bu = rows[ts.model[rows] == BUSHING]
    if bu.size:
        a, b = ts.body_a[bu], ts.body_b[bu]
        pa = kin.points_G(a, ts.r_a_B[bu])
        pb = kin.points_G(b, ts.r_b_B[bu])
        va = kin.point_velocities_G(a, ts.r_a_B[bu])
        vb = kin.point_velocities_G(b, ts.r_b_B[bu])
        arm_a = pa - kin.p_G[a]
        arm_b = pb - kin.p_G[b]
        d = pb - pa
        R_GS = kin.R_GB[a] @ ts.R_AS[bu]
        x_S = np.einsum("kji,kj->ki", R_GS, d) - ts.rest_S[bu]
        xdot_S = np.einsum("kji,kj->ki", R_GS, vb - va - np.cross(kin.w_G[a], d))
        f_S = polynomial_force(x_S, ts.coeffs[bu]) + ts.damping[bu] * xdot_S
        F = np.einsum("kij,kj->ki", R_GS, f_S)
        kt = polynomial_stiffness(x_S, ts.coeffs[bu])
        Kg = R_GS @ (kt[:, :, None] * np.swapaxes(R_GS, 1, 2))
        Cg = R_GS @ (ts.damping[bu][:, :, None] * np.swapaxes(R_GS, 1, 2))
        D = _relative_map(arm_a, arm_b)
        DF = Kg @ D
        DF[:, :, 3:6] += Kg @ skew(d) - skew(F)
        c_arm = pb - kin.p_G[a]
        Dc = np.zeros_like(D)
        Dc[:, :, 0:3] = -eye
        Dc[:, :, 6:9] = eye
        Dc[:, :, 9:12] = -skew(arm_b)
        JA = np.concatenate([DF, -skew(F) @ Dc + skew(c_arm) @ DF], axis=1)
        JB = np.concatenate([-DF, -skew(arm_b) @ DF], axis=1)
        JB[:, 3:6, 9:12] += -skew(F) @ skew(arm_b)
        _scatter(K, a, b, -np.concatenate([JA, JB], axis=1))
        DC = Cg @ D
        DC[:, :, 3:6] += Cg @ skew(d)
        JA = np.concatenate([DC, skew(c_arm) @ DC], axis=1)
        JB = np.concatenate([-DC, -skew(arm_b) @ DC], axis=1)
        _scatter(C, a, b, -np.concatenate([JA, JB], axis=1))
    return K, C


def point_load_stiffness(kin: BodyKinematics, body: np.ndarray, r_B: np.ndarray, f_G: np.ndarray) -> np.ndarray:
    """K (6n, 6n) of forces fixed in G at points fixed on bodies: only the turning moment arm."""
    n = kin.n_bodies
    K = np.zeros((6 * n, 6 * n))
    arm = np.einsum("kij,kj->ki", kin.R_GB[body], r_B)
    blocks = -(skew(f_G) @ skew(arm))
    idx = 6 * body[:, None] + 3 + np.arange(3)
    np.add.at(K, (idx[:, :, None], idx[:, None, :]), blocks)
    return K


# ---------------------------------------------------------------- numerical fallback

def perturbed(kin: BodyKinematics, dof: int, h: float, velocity: bool = False) -> BodyKinematics:
    """A copy of kin with small-motion coordinate ``dof`` (6 per body) moved by h.

    Position DOFs: translation of the COM or a rotation exp(h e_j ×) applied in G; velocity DOFs
    (``velocity=True``): v_G or w_G changed by h.
    """
    i, j = divmod(dof, 6)
    p, R, v, w = kin.p_G.copy(), kin.R_GB.copy(), kin.v_G.copy(), kin.w_G.copy()
    if velocity:
        (v if j < 3 else w)[i, j % 3] += h
    elif j < 3:
        p[i, j] += h
    else:
        rv = np.zeros(3)
        rv[j - 3] = h
        R[i] = quat_to_matrix(rotvec_to_quat(rv)) @ R[i]
    return BodyKinematics(p, R, v, w)


def generalized_force_vector(elements, t: float, kin: BodyKinematics) -> np.ndarray:
    """Stacked [force_G; torque_G] per body (6n,) of a list of elements."""
    n = kin.n_bodies
    F = np.zeros((n, 3))
    T = np.zeros((n, 3))
    for el in elements:
        el.accumulate(t, kin, F, T)
    return np.concatenate([F, T], axis=1).ravel()


def finite_difference_stiffness(
    elements, t: float, kin: BodyKinematics, length_scale: float = 0.1, velocity: bool = False,
    dofs: np.ndarray | None = None,
) -> np.ndarray:
    """-∂g/∂q (or -∂g/∂u with ``velocity``) (6n, 6n) by central differences of ``accumulate``.

    ``dofs``: columns to compute (default all); the others stay zero.
    """
    n = kin.n_bodies
    K = np.zeros((6 * n, 6 * n))
    cols = np.arange(6 * n) if dofs is None else np.asarray(dofs)
    for col in map(int, cols):  # loop over DOFs (6 per body), not over elements
        h = (FD_STEP_LENGTH * length_scale) if (col % 6 < 3 and not velocity) else FD_STEP_ANGLE
        if velocity:
            h = FD_STEP_ANGLE * max(1.0, float(np.abs(kin.w_G).max()) + float(np.abs(kin.v_G).max()))
        gp = generalized_force_vector(elements, t, perturbed(kin, col, h, velocity))
        gm = generalized_force_vector(elements, t, perturbed(kin, col, -h, velocity))
        K[:, col] = -(gp - gm) / (2 * h)
    return K
