"""Static equilibrium of a project's tree, the one procedure every tree study uses: Newton in tree
coordinates; with contact, on frozen contact sets regenerated between solves (MJM's statics, seed
004 §3.4) and, when that fails, a continuation in contact stiffness; without contact, damped
dynamics when Newton fails far from equilibrium. Failures name the most unbalanced body."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from jointmodeller.app.mobilized import MobilizedProject, forces_with, mech_kinematics_at
from jointmodeller.core.state import State

STALL_SETS = 8
"""Contact sets regenerated without lowering the best true residual before a contact equilibrium
gives up as stalled (a laxity sweep then approaches the load in smaller steps)."""


def contact_equilibrium(mp: MobilizedProject, state, *, force_tol: float, moment_tol: float,
                        max_regenerations: int = 40, iterations_per_set: int = 60, progress=None, cancel=None,
                        max_wall_s: float | None = None, on_pose: Callable[[np.ndarray], None] | None = None,
                        contact_scale: float = 1.0):
    """Static equilibrium of a tree with contact pairs: MJM's procedure for statics (seed 004 §3.4)
    in tree coordinates, as the free-body solver does it — freeze each pair's contact set (with a band
    of vertices about to touch), solve Newton on that smooth problem until a frozen vertex has moved
    half the band (no trial step may move one farther than the whole band or a face: ``max_move``),
    regenerate the sets at the new pose, and repeat until the true residual
    (regenerated contact) meets the tolerances. on_pose(q): the pose after each contact set.
    contact_scale: solve with every contact pair's stiffness times this (copies of the pairs,
    ``ContactPair.scaled``; the built system is not changed).
    Each set's solve starts from the true forces at the pose where it was frozen, which that set
    reproduces (to rounding, 1e-13 of the forces on the demo elbow): one evaluation fewer per set.
    Returns a TreeEquilibriumResult judged on the true residual."""
    from jointmodeller.core.studies.equilibrium import contact_band, frozen_set_motion
    from jointmodeller.core.studies.tree_equilibrium import (
        TreeEquilibriumResult,
        residual_norms,
        solve_tree_equilibrium,
        unbalanced_forces,
    )

    system = mp.model.system
    L = mp.built.system.length_scale
    elements = [e.scaled(contact_scale) if contact_scale != 1.0 and hasattr(e, "scaled") else e
                for e in mp.bridge.elements]
    contacts = [e for e in elements if hasattr(e, "frozen")]
    others = [e for e in elements if not hasattr(e, "frozen")]
    band, limit = contact_band(contacts)
    true_forces = forces_with(mp, elements)
    t = float(state.t)
    started = time.perf_counter()
    q = np.array(state.q, float)
    its = evals = 0
    prev_keys = None
    Q_true = None  # the true generalized forces at q, where the next set is frozen: its first evaluation
    ok = stopped = False
    history = []
    for k in range(max_regenerations):
        if (cancel is not None and cancel()) or (max_wall_s is not None and time.perf_counter() - started > max_wall_s):
            stopped = True
            break
        mk = mech_kinematics_at(mp, q)
        frozen = [c.frozen(mk, band) for c in contacts]
        sub = solve_tree_equilibrium(system, State(t, q, np.zeros(system.nu)), length_scale=L, t=t,
                                     force_tol=force_tol, moment_tol=moment_tol, max_iterations=iterations_per_set,
                                     forces=forces_with(mp, others + frozen), move_limit=limit,
                                     moved=frozen_set_motion(frozen, lambda x: mech_kinematics_at(mp, x)),
                                     broyden=True, cancel=cancel, max_move=2.0 * limit, forces_at_start=Q_true)
        q = sub.state.q
        its, evals = its + sub.iterations, evals + sub.evaluations
        Q_true = true_forces(t, q)
        r = unbalanced_forces(system, t, q, Q_true)
        f, m = residual_norms(system, r)
        history.append(max(f, m / L))
        if progress is not None:
            progress(min(0.99, (k + 1) / max_regenerations))
        if on_pose is not None:
            on_pose(q)
        if f <= force_tol and m <= moment_tol:
            ok = True
            break
        if sub.stopped:
            stopped = True
            break
        keys = [c.frozen(mech_kinematics_at(mp, q)).key() for c in contacts]
        if sub.converged and keys == prev_keys:
            break  # the set holds but the true residual differs: nothing left to regenerate
        if keys == prev_keys and not sub.converged and not (len(sub.history) > 1 and
                                                            sub.history[-1] < 0.99 * sub.history[0]):
            break  # the same frozen problem, on which Newton made no headway: repeating it cannot help
        prev_keys = keys
        if len(history) > STALL_SETS and min(history[-STALL_SETS:]) >= min(history[:-STALL_SETS]):
            break  # STALL_SETS regenerations without a better residual: stalled (a sweep bisects instead)
    r = unbalanced_forces(system, t, q, true_forces(t, q))
    f, m = residual_norms(system, r)
    if ok:
        message = f"equilibrium found: residual {f:.3g} N, {m:.3g} N·m (contact sets regenerated {k + 1} times)"
    elif stopped:
        message = (f"stopped (time limit or by the user) after {k + 1} contact sets: residual {f:.3g} N, "
                   f"{m:.3g} N·m")
    else:
        message = (f"no equilibrium within tolerance: residual {f:.3g} N, {m:.3g} N·m after {k + 1} contact "
                   "sets (the bones may not meet where contact is defined, or a coordinate is unconstrained)")
    return TreeEquilibriumResult(State(t, q, np.zeros(system.nu)), f, m, ok, its, evals, message, history, r,
                                 stopped=stopped and not ok)


def unbalanced_description(mp: MobilizedProject, q: np.ndarray, r: np.ndarray, count: int = 2) -> str:
    """Where a failed equilibrium is out of balance, in words: the ``count`` largest unbalanced
    generalized forces (force [N] on translations, moment [N·m] on rotations, compared per model
    length), each as the body its coordinate moves, the amount and the direction in ground
    ("patella_r: 3.95 N along (+0.00, −1.00, +0.00) (coordinate pf_ty_r)")."""
    system = mp.model.system
    r = np.asarray(r, float)
    if r.size == 0 or not np.all(np.isfinite(r)):
        return "the unbalanced forces are not finite"
    rot = system.rotational_u
    L = mp.built.system.length_scale
    scaled = np.abs(r) / np.where(rot, L, 1.0)
    Jw, Jv = system.jacobians(system.kinematics(q))
    coord = {k: n for n, k in mp.model.uindex.items()}
    body_name = {i: n for n, i in mp.model.body.items()}
    tree = system.tree
    parts = []
    for k in np.argsort(-scaled)[:count]:
        if scaled[k] <= 0.0:
            break
        owner = next((b for b in range(system.n_bodies)
                      if int(tree.uoff[b]) <= k < int(tree.uoff[b] + tree.nu[b])), None)
        if owner is None:
            continue
        body = body_name.get(owner, f"body {owner}")
        J = Jw[owner, :, k] if rot[k] else Jv[owner, :, k]
        n = float(np.linalg.norm(J))
        d = np.sign(r[k]) * J / n if n > 0 else np.zeros(3)
        amount = f"{abs(r[k]):.3g} N·m about" if rot[k] else f"{abs(r[k]):.3g} N along"
        parts.append(f"{body}: {amount} ({d[0]:+.2f}, {d[1]:+.2f}, {d[2]:+.2f}) in ground "
                     f"(coordinate {coord.get(int(k), f'u{k}')})")
    return "; ".join(parts) if parts else "no unbalanced force"


CONTACT_CONTINUATION = (0.1, 0.3, 1.0)
"""Contact stiffness scales solved in turn, each from the last's pose, when a contact equilibrium
fails at full stiffness: softer cartilage spreads the load over more springs and smooths the
problem (issue 15 item 5); the last scale is the material's."""


SETTLE_SPAN_S = 0.5
"""First span of damped dynamics [s] when tree Newton fails far from equilibrium (then ×4, ×16)."""


def equilibrium_solver(mp: MobilizedProject, *, max_iterations: int = 100, progress=None, cancel=None,
                       max_wall_s: float | None = None, settle: bool = True,
                       on_pose: Callable[[np.ndarray], None] | None = None) -> Callable:
    """solve(state, force_tol, moment_tol) -> TreeEquilibriumResult for this tree: Newton in tree
    coordinates, on frozen contact sets regenerated between solves when the project has contact
    (:func:`contact_equilibrium`); without contact, a Newton that fails is restarted from the pose
    damped dynamics settle to (kinetic damping, spans SETTLE_SPAN_S ×1, ×4, ×16), as the free-body
    solver does (``settle=False``: not — a laxity sweep bisects its load steps instead). The one
    choice every tree study (equilibrium, laxity) makes. on_pose(q): each intermediate pose (after
    a contact set, a Newton solve or a settling span), for a live view."""
    from jointmodeller.core.studies.tree_equilibrium import settle_tree, solve_tree_equilibrium

    system = mp.model.system
    has_contact = any(hasattr(e, "frozen") for e in mp.bridge.elements)

    def solve(state, force_tol: float, moment_tol: float):
        res = solve_on_tree(state, force_tol, moment_tol)
        if res.status == "failed" and res.residual is not None:
            res.message += "; most unbalanced: " + unbalanced_description(mp, res.state.q, res.residual)
        return res

    def on_contact(state, force_tol: float, moment_tol: float, budget_s: float | None, scale: float = 1.0):
        return contact_equilibrium(mp, state, force_tol=force_tol, moment_tol=moment_tol,
                                   iterations_per_set=max_iterations, progress=progress, cancel=cancel,
                                   max_wall_s=budget_s, on_pose=on_pose, contact_scale=scale)

    def solve_on_tree(state, force_tol: float, moment_tol: float):
        if has_contact:
            started = time.perf_counter()
            res = on_contact(state, force_tol, moment_tol, max_wall_s)
            if res.status != "failed" or (cancel is not None and cancel()):
                return res
            # continuation in contact stiffness: softer contact first, each solution the next start
            st, last = state, None
            for scale in CONTACT_CONTINUATION:
                left = None if max_wall_s is None else max_wall_s - (time.perf_counter() - started)
                if left is not None and left <= 0:
                    break
                last = on_contact(st, force_tol, moment_tol, left, scale)
                if not last.converged:
                    break
                st = State(float(state.t), last.state.q, np.zeros(system.nu))
            if last is not None and last.converged:  # converged at the last scale, 1
                last.message += (" (after continuation in contact stiffness ×"
                                 + ", ×".join(f"{c:g}" for c in CONTACT_CONTINUATION) + ")")
                return last
            return res
        started = time.perf_counter()

        def newton(st, budget):
            left = None if max_wall_s is None else max(max_wall_s - (time.perf_counter() - started), 0.0)
            res = solve_tree_equilibrium(system, st, length_scale=mp.built.system.length_scale, t=float(state.t),
                                         force_tol=force_tol, moment_tol=moment_tol, max_iterations=budget,
                                         progress=progress, cancel=cancel, max_wall_s=left)
            if on_pose is not None:
                on_pose(res.state.q)
            return res

        res = newton(state, max_iterations)
        span = SETTLE_SPAN_S
        for _ in range(3 if settle else 0):  # far from equilibrium: damped dynamics, then Newton (spans ×4)
            if res.status != "failed":
                break
            if max_wall_s is not None and time.perf_counter() - started > max_wall_s:
                break
            settled = settle_tree(system, State(float(state.t), res.state.q, np.zeros(system.nu)), span_s=span,
                                  cancel=cancel)
            again = newton(settled, max(max_iterations // 2, 10))
            if again.converged or again.residual_force_N + again.residual_moment_Nm / mp.built.system.length_scale < \
                    res.residual_force_N + res.residual_moment_Nm / mp.built.system.length_scale:
                again.message = again.message + " (after damped dynamics)" if again.converged else again.message
                res = again
            span *= 4.0
        return res

    return solve
