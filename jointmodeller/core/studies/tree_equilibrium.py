"""Static equilibrium of a multibody tree in its own coordinates (joints, welds, constraints honoured).

At rest the generalized forces of everything that acts (force elements and gravity) are
``Q(q) = −ID(q, u = 0, u̇ = 0)``. With constraint rows G(q) (couplers, locked and prescribed
coordinates, geometric constraints) the pose is in equilibrium when Q lies in the span of Gᵀ (the
constraint forces can balance it): ``P Q = 0`` with P the projector onto the null space of G. Newton's
method works in null-space coordinates z (u = N z, N an orthonormal basis from the SVD of G), with a
forward-difference Jacobian (the force elements here — wrapped paths, contact — have no analytic
tangent in tree coordinates) and Powell's dogleg trust region on the scaled residual (MINPACK's
hybrd: the Newton step when it fits, bent towards steepest descent when the stiffness is nearly
singular, as with slack ligaments). After every step the position constraints are re-satisfied by
coordinate projection.

Residuals are judged per speed in its own unit: N for a translational speed, N·m for a rotational
one (``MultibodySystem.rotational_u``: by the mobilizers' kinds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from jointmodeller.core.multibody.constraints import constraint_rows, project_positions
from jointmodeller.core.state import State

FORCE_TOLERANCE_N = 1e-8
MOMENT_TOLERANCE_NM = 1e-9
MAX_STEP_LENGTH = 0.02  # per Newton step, times the model length scale
MAX_STEP_ANGLE = 0.05  # rad per Newton step
RANK_TOLERANCE = 1e-10  # relative singular value below which a constraint row is dependent
CONSTRAINT_TOLERANCE = 1e-12  # RMS position error [m or rad] kept after every step


@dataclass
class TreeEquilibriumResult:
    """Outcome of :func:`solve_tree_equilibrium`.

    state: the equilibrium (or last) state, speeds zero; residual_force_N / residual_moment_Nm:
    largest unbalanced generalized force over translational / rotational speeds; converged;
    iterations; evaluations (generalized-force evaluations); message; history (scaled residual norm
    per accepted step); residual (nu,) the unbalanced generalized forces P Q at the result;
    stopped: the caller's cancel or the time limit ended the solve (``status``).
    """

    state: State
    residual_force_N: float
    residual_moment_Nm: float
    converged: bool
    iterations: int
    evaluations: int
    message: str
    history: list = field(default_factory=list)
    residual: np.ndarray | None = None
    stopped: bool = False

    @property
    def status(self) -> str:
        """"completed" (converged), "stopped" (by the caller or the time limit) or "failed"."""
        return "completed" if self.converged else ("stopped" if self.stopped else "failed")


def generalized_forces_at_rest(system, t: float, q: np.ndarray) -> np.ndarray:
    """Q (nu,): generalized forces of all force elements and gravity at q with the bodies at rest."""
    state = State(t, q, np.zeros(system.nu))
    return -system.inverse_dynamics(state, np.zeros(system.nu))


def generalized_forces_of(system, q: np.ndarray, force_G: np.ndarray, torque_G: np.ndarray, kin=None) -> np.ndarray:
    """Q (nu,) at rest of gravity and the given body loads (force at each centre of mass and moment
    about it, (nb, 3) in G) — the system's own force elements are not evaluated."""
    from jointmodeller.core.multibody.packed import rnea_p

    kin = kin if kin is not None else system.kinematics(q)
    F = system.spatial_forces(kin, force_G, torque_G)
    z = np.zeros_like(kin.v)
    tau, _ = rnea_p(system._ib, system._fb, kin.Xup, kin.S, z, z, np.zeros(system.nu), F, True)
    return -tau


def unbalanced_forces(system, t: float, q: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """P Q (nu,): the part of generalized forces Q that the constraints at q cannot hold."""
    if not system.constraints:
        return np.asarray(Q, float)
    _, G, _, _ = constraint_rows(system, State(t, q, np.zeros(system.nu)))
    N = null_space(G, system.nu)
    return N @ (N.T @ Q)


def residual_norms(system, r: np.ndarray) -> tuple[float, float]:
    """Largest unbalanced force [N] over translational speeds and moment [N·m] over rotational ones."""
    rot = system.rotational_u
    return (float(np.abs(r[~rot]).max()) if (~rot).any() else 0.0,
            float(np.abs(r[rot]).max()) if rot.any() else 0.0)


def null_space(G: np.ndarray, nu: int) -> np.ndarray:
    """Orthonormal basis (nu, d) of the speeds the constraint rows G (m, nu) allow."""
    if G.shape[0] == 0:
        return np.eye(nu)
    _, s, Vt = np.linalg.svd(G)
    rank = int(np.sum(s > RANK_TOLERANCE * max(float(s[0]) if s.size else 0.0, 1.0)))
    return Vt[rank:].T


def dogleg_step(J: np.ndarray, r: np.ndarray, W: np.ndarray, G: np.ndarray,
                radius: float) -> tuple[np.ndarray | None, float]:
    """Powell's dogleg step z for the residual model r + J z (MINPACK's hybrd; Nocedal & Wright §4.1).

    Minimises |W (r + J z)|² within the trust region zᵀ G z ≤ radius² (G symmetric positive
    definite): the Newton step when it fits, else the path from the Cauchy point (the model's minimum
    along steepest descent in the metric G) towards it, cut at the boundary. Unlike a line search on
    a clipped Newton step, this bends towards descent when the stiffness is nearly singular (slack
    ligaments) and the Newton step points far outside. Returns (z, predicted decrease of |W r|²), or
    (None, 0) when no finite step exists."""
    A = W @ J
    b = W @ r
    with np.errstate(all="ignore"):
        try:
            z_newton = np.linalg.solve(J, -r)
        except np.linalg.LinAlgError:
            z_newton = np.full_like(r, np.nan)
        if not np.all(np.isfinite(z_newton)):
            z_newton = np.linalg.lstsq(J, -r, rcond=None)[0]

    def size(v: np.ndarray) -> float:
        return float(np.sqrt(max(float(v @ G @ v), 0.0)))

    if np.all(np.isfinite(z_newton)) and size(z_newton) <= radius:
        z = z_newton
    else:
        g = A.T @ b
        p = -np.linalg.solve(G, g)  # steepest descent in the metric G
        Ap = A @ p
        if not (np.all(np.isfinite(p)) and size(p) > 0.0):
            return None, 0.0
        tau = -float(g @ p) / max(float(Ap @ Ap), 1e-300)
        z_cauchy = tau * p
        if size(z_cauchy) >= radius or not np.all(np.isfinite(z_newton)):
            z = p * (radius / size(p))
        else:
            d = z_newton - z_cauchy
            a, half_b, c = float(d @ G @ d), float(z_cauchy @ G @ d), size(z_cauchy) ** 2 - radius ** 2
            beta = (-half_b + np.sqrt(max(half_b * half_b - a * c, 0.0))) / max(a, 1e-300)
            z = z_cauchy + min(max(beta, 0.0), 1.0) * d
    if not np.all(np.isfinite(z)):
        return None, 0.0
    model = b + A @ z
    return z, float(b @ b - model @ model)


def move(system, q: np.ndarray, du: np.ndarray) -> np.ndarray:
    """Coordinates after a small motion du of the speeds (q̇ = N(q) u, quaternions renormalised)."""
    return system.normalize(q + system.qdot(q, du))


def solve_tree_equilibrium(
    system,
    state: State,
    *,
    length_scale: float,
    t: float | None = None,
    force_tol: float = FORCE_TOLERANCE_N,
    moment_tol: float = MOMENT_TOLERANCE_NM,
    max_iterations: int = 100,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    max_wall_s: float | None = None,
    forces: Callable[[float, np.ndarray], np.ndarray] | None = None,
    move_limit: float | None = None,
    moved: Callable[[np.ndarray, np.ndarray], float] | None = None,
    broyden: bool = False,
    max_move: float | None = None,
    forces_at_start: np.ndarray | None = None,
) -> TreeEquilibriumResult:
    """Find the pose near ``state`` where the constraints can hold every generalized force.

    length_scale [m]: a typical model size (trust region and the scaling of moments against forces);
    t: the load time (prescribed coordinates take their value at t; default state.t). forces(t, q):
    the generalized forces to balance (default: the system's force elements and gravity,
    :func:`generalized_forces_at_rest`) — e.g. with contact sets frozen. move_limit [m]: stop (not
    converged) once moved(q_start, q) passes it, so a caller can regenerate what it froze. broyden:
    after a full Newton step, update the Jacobian by Broyden's rank-one formula instead of measuring
    it again (d + 1 force evaluations saved per step on a smooth problem); as in MINPACK's hybrd, a
    step the update misleads shrinks the trust region, and the second in a row is retried with a
    fresh finite-difference Jacobian. max_move [m] (with ``moved``): no trial step may take the
    caller's frozen vertices farther than this from where they were at ``state`` — a longer step is
    shortened along itself before it is evaluated, so a step cannot plunge through a frozen contact
    set (the trust region would collapse on the overshoot) and every step ends where the set still
    describes the contact. forces_at_start (nu,): the generalized forces at ``state.q`` when the caller
    has them (the true forces where a contact set was just frozen, which the frozen set reproduces to
    rounding): the solve starts from them instead of evaluating its first pose (used only when the
    constraints leave state.q where it is).
    """
    started = time.perf_counter()
    t = float(state.t if t is None else t)
    L = float(length_scale)
    q = np.array(state.q, float)
    evaluations = [0]

    def stopped() -> bool:
        if max_wall_s is not None and time.perf_counter() - started > max_wall_s:
            return True
        return bool(cancel()) if cancel is not None else False

    def on_manifold(q: np.ndarray) -> np.ndarray:
        if not system.constraints:
            return q
        st = State(t, q, np.zeros(system.nu))
        project_positions(system, st, CONSTRAINT_TOLERANCE, max_iter=50)
        return st.q

    def basis(q: np.ndarray) -> np.ndarray:
        if not system.constraints:
            return np.eye(system.nu)
        _, G, _, _ = constraint_rows(system, State(t, q, np.zeros(system.nu)))
        return null_space(G, system.nu)

    given = forces

    def generalized(q: np.ndarray) -> np.ndarray:
        evaluations[0] += 1
        return generalized_forces_at_rest(system, t, q) if given is None else given(t, q)

    q_given = q
    q = on_manifold(q)
    q_start = q
    rot = system.rotational_u
    unit = np.where(rot, 1.0 / L, 1.0)  # moments over the length scale: comparable to forces

    def unbalanced(N: np.ndarray, Q: np.ndarray) -> np.ndarray:
        return N @ (N.T @ Q)

    def merit(r: np.ndarray) -> float:
        return float(np.linalg.norm(r * unit))

    def done(r: np.ndarray) -> bool:
        f = np.abs(r[~rot]).max() if (~rot).any() else 0.0
        m = np.abs(r[rot]).max() if rot.any() else 0.0
        return f <= force_tol and m <= moment_tol

    def capped_step(z, q_try, predicted, J, rz, W):
        # no trial step may take a frozen vertex farther than max_move from where the set was frozen:
        # a longer one is shortened along itself to max_move less the motion so far (enough by the
        # triangle inequality were the motion linear in the step); after three passes by 0.9 × the ratio
        # still missing, so the loop ends within the cap
        left = -1.0  # max_move less the motion so far: the same in every pass, found on the first
        for k in range(60):
            total = moved(q_start, q_try)
            if total <= max_move:
                break
            s = 0.0
            if k < 3:
                if left < 0.0:
                    left = max(max_move - moved(q_start, q), 0.0)
                s = left / max(moved(q, q_try), 1e-300)
            z = z * (s if 0.0 < s < 1.0 else 0.9 * max_move / total)
            q_try = on_manifold(move(system, q, N @ z))
            b = W @ rz
            model = b + W @ (J @ z)
            predicted = float(b @ b - model @ model)
        return z, q_try, predicted

    N = basis(q)
    if forces_at_start is not None and np.array_equal(q, q_given):
        Q = np.array(forces_at_start, float)  # the caller's evaluation at this very pose
    else:
        Q = generalized(q)
    r = unbalanced(N, Q)
    history = [merit(r)]
    it = 0
    radius = 1.0  # trust region, in units of the largest step (MAX_STEP_LENGTH·L, MAX_STEP_ANGLE)
    step_scale = np.where(rot, 1.0 / MAX_STEP_ANGLE, 1.0 / (MAX_STEP_LENGTH * L))
    failure = ""
    J, measured = None, False
    misled = 0  # steps in a row the (updated) Jacobian misled
    while not done(r) and it < max_iterations and N.shape[1] > 0:
        if stopped():
            failure = "stopped"
            break
        it += 1
        d = N.shape[1]
        rz = N.T @ Q
        if J is None or J.shape != (d, d):
            # forward-difference Jacobian of z -> Nᵀ Q(q ⊕ N z), steps sized per direction's unit
            scale_dir = np.array([1.0 / max(float(np.linalg.norm(N[:, j] * np.where(rot, 1.0, 1.0 / L))), 1e-12)
                                  for j in range(d)])
            h = 1e-7 * scale_dir
            J = np.empty((d, d))
            for j in range(d):
                qj = move(system, q, h[j] * N[:, j])
                J[:, j] = (N.T @ generalized(qj) - rz) / h[j]
            measured = True  # J is the finite-difference Jacobian at the current q
        W = unit[:, None] * N  # scaled residual per z-residual: merit(r) = |W rz|
        metric = N.T @ (step_scale[:, None] ** 2 * N)  # the trust region's metric in z
        z, predicted = dogleg_step(J, rz, W, metric, radius)
        if z is None:
            failure = "the stiffness matrix is singular in every direction tried"
            break
        q_try = on_manifold(move(system, q, N @ z))
        if max_move is not None and moved is not None:
            z, q_try, predicted = capped_step(z, q_try, predicted, J, rz, W)
        size = float(np.sqrt(z @ metric @ z))
        m0 = merit(r)
        N_try = basis(q_try)
        Q_try = generalized(q_try)
        r_try = unbalanced(N_try, Q_try)
        actual = m0 ** 2 - merit(r_try) ** 2 if np.all(np.isfinite(r_try)) else -np.inf
        ratio = actual / predicted if predicted > 0.0 else -np.inf
        if ratio < 0.25:
            radius = 0.25 * size
        elif ratio > 0.75 and size > 0.99 * radius:
            radius = min(2.0 * radius, 1.0)
        if ratio <= 1e-4:
            misled += 1
            if not measured and misled >= 2:  # an updated Jacobian misled twice running: measure it afresh
                J = None
                it -= 1
                continue
            if radius < 1e-12:
                failure = "no step lowers the residual (the pose may be at a limit of the model)"
                break
            continue
        misled = 0
        if broyden and N_try.shape == N.shape:
            # Broyden's rank-one update of J from the step taken (in the old basis)
            dr = N.T @ Q_try - rz
            J = J + np.outer(dr - J @ z, z) / max(float(z @ z), 1e-300)
            measured = False
        else:
            J = None
        q, N, Q, r = q_try, N_try, Q_try, r_try
        history.append(merit(r))
        if progress is not None:
            progress(min(0.99, it / max_iterations))
        if move_limit is not None and moved is not None and moved(q_start, q) > move_limit:
            failure = "moved"
            break
    ok = done(r)
    fmax = float(np.abs(r[~rot]).max()) if (~rot).any() else 0.0
    mmax = float(np.abs(r[rot]).max()) if rot.any() else 0.0
    if ok:
        message = f"equilibrium found: residual {fmax:.3g} N, {mmax:.3g} N·m"
    elif failure == "moved":
        message = f"moved past the limit after {it} iterations: residual {fmax:.3g} N, {mmax:.3g} N·m"
    elif failure == "stopped":
        message = (f"stopped (time limit or by the user) after {it} iterations: residual {fmax:.3g} N, "
                   f"{mmax:.3g} N·m")
    else:
        why = failure or f"{it} iterations"
        message = (f"no equilibrium within tolerance ({why}): residual {fmax:.3g} N, {mmax:.3g} N·m "
                   "(a coordinate may be unconstrained, or every ligament across it slack)")
    if progress is not None:
        progress(1.0)
    return TreeEquilibriumResult(State(t, q, np.zeros(system.nu)), fmax, mmax, ok, it, evaluations[0], message,
                                 history, r, stopped=failure == "stopped")


def unsupported_translations(system, q: np.ndarray, free_speed: np.ndarray,
                             connections: list[tuple[int, int]]) -> list[tuple[int, list[int]]]:
    """Bodies that gravity pulls along a free translational speed of their own mobilizer while
    nothing connects them (or the bodies they carry) to anything else: such a model has no static
    equilibrium. Returns [(body, [speed indices])].

    free_speed (nu,) bool: speeds not locked or prescribed; connections: pairs of bodies (-1 ground)
    joined by a force element or constraint (tissues with every body on their path, contact pairs,
    geometric constraints).
    """
    tree = system.tree
    nb = system.n_bodies
    kin = system.kinematics(q)
    Jw, Jv = system.jacobians(kin)
    arm = np.einsum("nij,nj->ni", kin.R_GB, system.com_B)
    Jcom = Jv + np.cross(Jw.transpose(0, 2, 1), arm[:, None, :]).transpose(0, 2, 1)  # (nb, 3, nu)
    Q_gravity = np.einsum("n,i,nik->k", system.mass, np.asarray(tree.gravity, float), Jcom)
    weight = float(np.sum(system.mass) * np.linalg.norm(tree.gravity))
    rot = np.abs(Jw).max(axis=(0, 1)) > 1e-12
    children: dict[int, list[int]] = {i: [] for i in range(-1, nb)}
    for i in range(nb):
        children[int(tree.parent[i])].append(i)
    out = []
    for b in range(nb):
        speeds = [k for k in range(int(tree.uoff[b]), int(tree.uoff[b] + tree.nu[b]))
                  if free_speed[k] and not rot[k] and abs(Q_gravity[k]) > 1e-9 * max(weight, 1e-300)]
        if not speeds:
            continue
        sub, stack = set(), [b]
        while stack:
            i = stack.pop()
            sub.add(i)
            stack += children[i]
        if not any((i in sub) != (j in sub) for i, j in connections):
            out.append((b, speeds))
    return out


@dataclass
class TreeLinearModel:
    """The linear small-motion model of a tree at a pose, in the motions its constraints allow.

    basis (nu, d): orthonormal speeds u = basis z; K, M (d, d): stiffness −∂(basisᵀ Q)/∂z (central
    differences) and mass basisᵀ M(q) basis; frequency_hz (d,) of K φ = ω² M φ (negative: unstable).
    """

    basis: np.ndarray
    K: np.ndarray
    M: np.ndarray
    frequency_hz: np.ndarray

    def compliance(self) -> np.ndarray:
        """(nu, nu): speeds' displacement per unit generalized force, basis K⁻¹ basisᵀ (joint laxity)."""
        return self.basis @ np.linalg.solve(0.5 * (self.K + self.K.T), self.basis.T)


def tree_linear_model(system, state: State, *, length_scale: float, step: float = 1e-6) -> TreeLinearModel:
    """K and M of the tree at ``state`` (speeds ignored) in the null space of its constraint rows."""
    import scipy.linalg

    t, q = float(state.t), np.array(state.q, float)
    if system.constraints:
        _, G, _, _ = constraint_rows(system, State(t, q, np.zeros(system.nu)))
        N = null_space(G, system.nu)
    else:
        N = np.eye(system.nu)
    rot = system.rotational_u
    d = N.shape[1]
    K = np.zeros((d, d))
    for j in range(d):
        h = step / max(float(np.linalg.norm(N[:, j] * np.where(rot, 1.0, 1.0 / length_scale))), 1e-12)
        Qp = generalized_forces_at_rest(system, t, move(system, q, h * N[:, j]))
        Qm = generalized_forces_at_rest(system, t, move(system, q, -h * N[:, j]))
        K[:, j] = -(N.T @ (Qp - Qm)) / (2 * h)
    M = N.T @ system.mass_matrix(q) @ N
    if d:
        lam = scipy.linalg.eigh(0.5 * (K + K.T), 0.5 * (M + M.T), eigvals_only=True)
        freq = np.sign(lam) * np.sqrt(np.abs(lam)) / (2 * np.pi)
    else:
        freq = np.zeros(0)
    return TreeLinearModel(N, K, M, freq)


def settle_tree(system, state: State, *, span_s: float, accuracy: float = 1e-6, max_steps: int = 20_000,
                cancel: Callable[[], bool] | None = None) -> State:
    """Damped dynamics by kinetic damping (dynamic relaxation), as the free-body solver's fallback
    does it: integrate the undamped motion from rest and stop every body whenever the kinetic energy
    passes a peak (each mode loses its energy at its own pace, soft and stiff alike), for ``span_s``
    simulated seconds or ``max_steps`` integrator steps. Returns the state reached, at rest — a
    start from which Newton converges where it failed far from equilibrium (a bone released a
    ligament's length away from hanging)."""
    from jointmodeller.core.multibody.integrate import simulate

    st = State(float(state.t), np.array(state.q, float), np.zeros(system.nu))
    t_end = st.t + float(span_s)
    chunk = min(0.01, float(span_s))
    steps = 0
    while st.t < t_end and steps < max_steps and not (cancel is not None and cancel()):
        traj = simulate(system, st, min(st.t + chunk, t_end), accuracy=accuracy, max_steps=2000)
        steps += traj.n_steps
        k = len(traj.t)
        ok = np.isfinite(traj.q).all(axis=1) & np.isfinite(traj.u).all(axis=1)
        if k == 0 or not ok[0]:
            break
        ke = np.array([system.kinetic_energy(State(traj.t[i], traj.q[i], traj.u[i])) if ok[i] else np.inf
                       for i in range(k)])
        past = np.flatnonzero((ke[1:] < ke[:-1]) | ~ok[1:])
        if past.size:  # the peak: stop everything there and start again from rest
            i = int(past[0])
            st = State(float(traj.t[i]), traj.q[i].copy(), np.zeros(system.nu))
            chunk = max(2.0 * (traj.t[i] - traj.t[0]), 1e-4)
        else:
            st = State(float(traj.t[-1]), traj.q[-1].copy(), traj.u[-1].copy())
            chunk = min(2.0 * chunk, float(span_s))
        if traj.status != "completed" and not past.size:
            break
    return State(st.t, st.q, np.zeros(system.nu))
