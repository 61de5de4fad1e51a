"""Fit model parameters (tissue stiffness scales, slack scales) to measured laxity curves.

Method: a projected Levenberg–Marquardt on the residual "simulated minus measured" at the measured
loads, in units of the resolution σ of a point: σ² = (the data's resolution)² + (the simulator's own
error bound)², the latter from the sweep's equilibrium tolerance
(``core.studies.laxity.SweepStarts.measure_error``). Parameters move by relative steps along
*directions* (one per free parameter, or one common relative change x_j(1 + δ) for a group): in
relative rather than log-scale steps, because a laxity curve depends on the sum of the stiffnesses
that resist a load, so the valley of scales that trade one bundle for another is straight (on the
demo elbow's six scales the log-scale fit crept 3 % a step along it and needed over 20 iterations;
the relative one converged in 8). The Jacobian along the directions is a set of central-difference
columns (two simulations each) that a caller may evaluate in parallel (``simulate_many``), each
warm-started from the current solution. Between measurements the columns follow Broyden's rank-one
update along each accepted step; they are measured again every :data:`MAX_UPDATES` steps, when an
updated set predicts a step badly, and before convergence is declared. A measured step that
overshoots gets one more simulation at the minimum of the parabola along it before damping. A
simulator that knows its own derivative at the points it simulated (``jacobian``: the laxity sweeps'
implicit-function sensitivities) gives the columns at those measurements instead, for no simulation.

Tolerances follow the sweep's accuracy instead of fixed digits:

- the fit has converged when the Gauss–Newton step would move no point of the curve by more than
  :data:`STEP_TOL` σ (what the data and the sweeps can still tell apart);
- identifiability: the Jacobian scaled to σ per unit relative change is decomposed (SVD); a singular
  value below :func:`identifiability_threshold` — what the finite-difference noise of the columns
  (2·error/h per point) can produce, or less than 1/:data:`IDENTIFIABLE_REL_STD` (the data would
  leave that direction uncertain by more than 25 %) — is a direction the data cannot determine. Its
  parameters are named: one alone (a near-zero column) is fixed at its current value; several
  (collinear columns) are grouped under one common scale, or fixed together when even their common
  scale has no measurable effect. They are then left out of the steps instead of wandering.

Confidence comes from the Jacobian at the solution: covariance ≈ s² (JᵀJ)⁻¹ with s² = SSR / (n − q),
and 95 % intervals with Student's t. ``accuracy`` bounds how far each fitted value can sit from the
exact least-squares solution because of the simulator's error alone: |Δu| ≤ |A⁺| ε/σ (ε the
per-point error bound), plus the last step not taken.

A wall-time budget (``max_wall_s``) or a simulator raising :class:`CalibrationStopped` ends the fit
with the best parameters found so far and a status saying why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

STEP_TOL = 0.1
"""Converged when the next Gauss–Newton step would change no point by more than this many σ."""
IDENTIFIABLE_REL_STD = 0.25
"""A direction whose relative standard deviation the data leave above this is not identifiable
(singular value of the σ-scaled Jacobian per unit relative change below 1/IDENTIFIABLE_REL_STD)."""
DIFF_STEP, MIN_DIFF_STEP = 0.05, 1e-4
"""Relative step h of the central-difference columns (x_j(1 ± h)): h = (3·ε/|m|)^(1/3) for a
simulator accurate to ε on values of size |m| — it balances the truncation error (~h²/6 relative) and
the noise (a column is two simulations each within ε over 2h: up to ε/h per point) — within
[MIN_DIFF_STEP, DIFF_STEP]. The demo elbow's calibration sweeps (ε ≈ 3e-5° on 2°) step by 2.4 %; a
smooth synthetic joint's (ε ≈ 5e-9) by 0.2 %. (Forward 5 % steps blurred the weak directions of the
demo's six scales enough to need 18 iterations; ±5 % on a slack length, beyond its prestrain, is
no derivative at all.)"""
WEAK_SHARE = 0.2
"""Parameters taking part in a weak singular direction: components of at least this size in its unit
right-singular vector."""
POOR_PREDICTION, MAX_UPDATES = 0.25, 3
"""A step whose actual decrease is below this fraction of the predicted one, taken with Broyden-updated
columns, has the columns measured again before the next step; so has every MAX_UPDATES-th step (a
Broyden-updated set can settle on a wrong stationary point in a valley and crawl there)."""
INITIAL_DAMPING, DAMPING_START, MIN_DAMPING, MAX_DAMPING = 0.0, 1e-3, 1e-9, 1e6
"""Levenberg damping μ (JᵀJ + μI, in σ per unit relative change), as fractions of the largest
diagonal entry of JᵀJ: at the start (0: a Gauss–Newton step first), after the first refused step
(Nielsen's τ: the directions the data see only through small differences between nearly parallel
columns then move little until the strong ones fit), below MIN a Gauss–Newton step again, above MAX
no step lowered the cost and the fit has stalled. Damping grows tenfold per refused step and shrinks
tenfold per accepted one. (A damped start sent the synthetic joint's stiffness-and-slack fit into a
local minimum at 1.10 and 1.02 instead of 1.25 and 0.97.)"""
DEFAULT_REL_ERROR = 1e-8
"""Simulator error assumed when the caller gives none: this fraction of the largest measured value."""

STATUS_TEXT = {
    "converged": "converged: the next step would change no point by more than {tol:g} resolution units",
    "at_bounds": "converged at the bounds: every step left would leave them",
    "stalled": "stalled: no step lowers the cost (the fit is at the resolution of the sweeps)",
    "max_iterations": "stopped after the maximum of {iterations} iterations",
    "budget": "stopped at the wall-time budget",
    "unidentifiable": "nothing to fit: no parameter has a measurable effect on the data",
}


class CalibrationStopped(Exception):
    """Raised (by the calibration or by a simulator) to end a fit early: the wall-time budget, the
    user's stop. ``status`` is "budget" or "stopped"; the message says why."""

    def __init__(self, message: str, status: str = "budget"):
        super().__init__(message)
        self.status = status


@dataclass
class CalibrationProgress:
    """One progress report: after the start point (iteration 0) and after every accepted step; cost =
    ½ Σ r² and rmse in the measure's ``unit`` (filled in by the caller that knows it), ``free``
    directions left to fit, ``evaluations`` simulations so far."""

    iteration: int
    evaluations: int
    cost: float
    rmse: float
    seconds: float
    free: int
    damping: float = 0.0
    unit: str = ""
    x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """The parameters at this point (the best so far)."""

    def line(self) -> str:
        """'iteration 3: cost 2.3e-05 deg², RMSE 0.0021 deg, 4 free, 19 simulations, 70.1 s'."""
        u = f" {self.unit}" if self.unit else ""
        cost = f"{self.cost:.4g}{u}²" if self.unit else f"{self.cost:.4g}"
        return (f"iteration {self.iteration}: cost {cost}, RMSE {self.rmse:.4g}{u}, "
                f"{self.free} free, {self.evaluations} simulations, {self.seconds:.1f} s")


@dataclass
class Identifiability:
    """What the data can determine. singular_values (q,) of the σ-scaled Jacobian (per unit relative
    change) at the
    start (one per parameter, strongest first) against ``threshold``; ``fixed``: parameter name ->
    why it was fixed; ``groups``: lists of names fitted with one common scale."""

    singular_values: np.ndarray
    threshold: float
    fixed: dict[str, str] = field(default_factory=dict)
    groups: list[list[str]] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"singular_values": [float(s) for s in self.singular_values], "threshold": float(self.threshold),
                "fixed": dict(self.fixed), "groups": [list(g) for g in self.groups]}

    def lines(self) -> list[str]:
        """Human-readable: one line per fixed parameter and per group."""
        out = [f"fixed {name}: {why}" for name, why in self.fixed.items()]
        out += [f"grouped (one common scale, the data cannot separate them): {', '.join(g)}" for g in self.groups]
        return out


@dataclass
class CalibrationResult:
    """names (p,), x0 (p,) start, x (p,) fitted, std (p,) standard errors, ci95 (p, 2), residuals (n,)
    at the fit, rmse and max_abs_error (measure units), cost = ½ Σ r², evaluations (simulations),
    success, message, correlation (p, p); status ("converged", "at_bounds", "stalled",
    "max_iterations", "budget", "stopped", "unidentifiable"), iterations, identifiability, sigma (the
    resolution of a point), accuracy (p,) bound from the simulator's error, seconds, executor (where the
    simulations ran)."""

    names: list[str]
    x0: np.ndarray
    x: np.ndarray
    std: np.ndarray
    ci95: np.ndarray
    residuals: np.ndarray
    rmse: float
    max_abs_error: float
    cost: float
    evaluations: int
    success: bool
    message: str
    correlation: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    rmse_initial: float = float("nan")
    status: str = "converged"
    iterations: int = 0
    identifiability: Identifiability | None = None
    sigma: float = float("nan")
    accuracy: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seconds: float = 0.0
    executor: str = "sequential"

    def as_dict(self) -> dict:
        """JSON-able summary."""
        def num(v) -> float | None:
            return float(v) if np.isfinite(v) else None

        fixed = self.identifiability.fixed if self.identifiability else {}
        grouped = {n: g for g in (self.identifiability.groups if self.identifiability else []) for n in g}
        params = {}
        for i, n in enumerate(self.names):
            p: dict[str, Any] = {"start": float(self.x0[i]), "fitted": float(self.x[i]), "std": num(self.std[i]),
                 "ci95": [num(self.ci95[i, 0]), num(self.ci95[i, 1])],
                 "accuracy": num(self.accuracy[i]) if self.accuracy.size else None}
            if n in fixed:
                p["fixed"] = fixed[n]
            if n in grouped:
                p["grouped_with"] = [m for m in grouped[n] if m != n]
            params[n] = p
        return {
            "parameters": params, "rmse": self.rmse, "rmse_initial": self.rmse_initial,
            "max_abs_error": self.max_abs_error, "cost": self.cost, "evaluations": self.evaluations,
            "iterations": self.iterations, "success": self.success, "status": self.status,
            "message": self.message, "n_points": int(self.residuals.size), "resolution": num(self.sigma),
            "seconds": self.seconds, "executor": self.executor,
            "identifiability": self.identifiability.as_dict() if self.identifiability else None,
        }


def fit_metrics(simulated: np.ndarray, measured: np.ndarray) -> dict:
    """RMSE and maximum absolute error of simulated against measured values (same shape)."""
    r = np.asarray(simulated, float) - np.asarray(measured, float)
    return {"rmse": float(np.sqrt(np.mean(r * r))) if r.size else float("nan"),
            "max_abs_error": float(np.max(np.abs(r))) if r.size else float("nan"), "n_points": int(r.size)}


def data_resolution(values: Sequence[float] | np.ndarray, loads: Sequence[float] | np.ndarray | None = None) -> float:
    """Resolution of measured values: the standard deviation of their rounding (quantum/√12, the
    quantum being the coarsest power of ten every value is a whole multiple of), or the pooled
    scatter of repeats at one load when larger. 0 for values given to full precision."""
    v = np.asarray(values, float)
    if not v.size:
        return 0.0
    big = float(np.max(np.abs(v))) or 1.0
    quantum = 0.0
    for e in range(int(np.floor(np.log10(big))) + 1, int(np.floor(np.log10(big))) - 13, -1):
        q = 10.0 ** e
        if np.all(np.abs(v / q - np.round(v / q)) <= 1e-6):  # whole multiples, to a millionth of q
            quantum = q
            break
    res = quantum / np.sqrt(12.0)
    if loads is not None:
        lo = np.asarray(loads, float)
        ss, dof = 0.0, 0
        for u in np.unique(lo):
            grp = v[lo == u]
            if grp.size > 1:
                ss += float(((grp - grp.mean()) ** 2).sum())
                dof += grp.size - 1
        if dof:
            res = max(res, float(np.sqrt(ss / dof)))
    return float(res)


def confidence(jac: np.ndarray, residuals: np.ndarray,
               level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard errors (p,), half-widths (p,) of the ``level`` interval and correlation (p, p) from the
    Jacobian (n, p) and residuals (n,) at a least-squares solution. NaN when n <= p or J is singular."""
    n, p = jac.shape
    if n <= p or p == 0:
        nan = np.full(p, np.nan)
        return nan, nan, np.full((p, p), np.nan)
    s2 = float(residuals @ residuals) / (n - p)
    _, sv, vt = np.linalg.svd(jac, full_matrices=False)
    if sv.size == 0 or sv[-1] <= sv[0] * 1e-12:
        nan = np.full(p, np.nan)
        return nan, nan, np.full((p, p), np.nan)
    cov = (vt.T / sv**2) @ vt * s2
    std = np.sqrt(np.diag(cov))
    half = stats.t.ppf(0.5 + level / 2, n - p) * std
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov / np.outer(std, std)
    return std, half, corr


def identifiability_threshold(n_points: int, n_directions: int, error: float, sigma: float, step: float) -> float:
    """Smallest singular value (σ per unit relative change) of the scaled Jacobian that the data can
    use: above what finite-difference noise can make of a zero column — the difference of two
    solutions each within ``error`` of the truth, over their relative spacing ``step``, is at most
    2·error/(step·σ) per entry, so at most 2·error/(step·σ)·√(n·q) in the matrix's spectral norm
    (bounded by its Frobenius norm) — and above 1/IDENTIFIABLE_REL_STD."""
    fd_noise = 2.0 * error / (abs(step) * sigma) * np.sqrt(max(n_points, 1) * max(n_directions, 1))
    return float(max(1.0 / IDENTIFIABLE_REL_STD, fd_noise))


def _reduce(A: np.ndarray, members: list[list[int]], threshold: Callable[[int], float], names: list[str],
            ident: Identifiability) -> tuple[np.ndarray, list[list[int]]]:
    """Fix or group the directions of ``A`` (n, q) whose singular values fall below the threshold,
    one weakest direction at a time; records them in ``ident``. Returns the reduced A and members."""
    A = A.copy()
    members = [list(m) for m in members]
    while members:
        _, s, vt = np.linalg.svd(A, full_matrices=False)
        thr = threshold(len(members))
        if s[-1] >= thr:
            break
        v = vt[-1]
        weak = [k for k in range(len(members)) if abs(v[k]) >= WEAK_SHARE]
        joined = A[:, weak].sum(axis=1)
        label = [names[j] for k in weak for j in members[k]]
        if len(weak) == 1:
            why = (f"no measurable effect on the data (sensitivity {s[-1]:.3g} σ per unit relative change, below "
                   f"{thr:.3g})")
            drop = weak
        elif float(np.linalg.norm(joined)) < threshold(len(members) - len(weak) + 1):
            why = "the data cannot separate it from {others} and their common scale has no measurable effect"
            drop = weak
        else:
            keep = weak[0]
            members[keep] = [j for k in weak for j in members[k]]
            A[:, keep] = joined
            drop = weak[1:]
            ident.groups = [g for g in ident.groups if not set(g) & set(label)] + [label]
            why = ""
        for k in drop:
            if not why:
                continue
            for j in members[k]:
                others = [n for n in label if n != names[j]]
                ident.fixed[names[j]] = why.replace("{others}", ", ".join(others) or "the others")
        if why:  # whole groups fixed: forget them as groups
            ident.groups = [g for g in ident.groups if not set(g) & set(label)]
        keep_idx = [k for k in range(len(members)) if k not in drop]
        A = A[:, keep_idx]
        members = [members[k] for k in keep_idx]
    return A, members


def calibrate(
    simulate: Callable[[np.ndarray], np.ndarray],
    measured: np.ndarray,
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    names: list[str],
    *,
    simulate_many: Callable[[np.ndarray, list[np.ndarray]], list[np.ndarray]] | None = None,
    simulation_error: np.ndarray | float | Callable[[], np.ndarray] | None = None,
    data_resolution: float = 0.0,
    diff_step: float = DIFF_STEP,
    xtol: float | None = None,
    max_iterations: int = 30,
    max_wall_s: float | None = None,
    progress: Callable[[CalibrationProgress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    identify: bool = True,
    initial_damping: float = INITIAL_DAMPING,
    jacobian: Callable[[np.ndarray], np.ndarray | None] | None = None,
) -> CalibrationResult:
    """Bounded least squares of ``simulate(x) - measured`` (see the module docstring).

    simulate: parameters (p,) -> predicted values (n,) at the measured points (same units); measured
    (n,); x0, lower, upper (p,) (lower > 0: parameters are scales, moved by relative steps); names (p,).
    simulate_many(base, points): the simulations at ``points`` (finite-difference columns about
    ``base``, which was the last point simulated and accepted), in order — in parallel and warm-started
    if the caller can; default: ``simulate`` one after the other. simulation_error: bound on the
    simulator's error per point (n,) or scalar, or a callable giving it after a simulation (read once
    after the start point). data_resolution: the measured values' resolution (:func:`data_resolution`).
    diff_step: the largest relative step of the columns (see :data:`DIFF_STEP`). xtol: also stop when
    no scale would change by more than this fraction. max_wall_s / cancel(): end early with the best point so far.
    jacobian(x): the simulator's own derivative d simulate / d x (n, p) at a point it has simulated
    (e.g. by the implicit-function theorem at each equilibrium), or None where it has none. Where it
    has one, a measurement of the columns takes it instead of central-difference simulations (same
    schedule: measured at the start, after MAX_UPDATES Broyden-updated steps or a poorly predicted one,
    before convergence); elsewhere they are measured by central differences as without it. (Taking it
    at every accepted point instead crawled on the synthetic joint's tension-only ligaments: 16
    iterations against 10, each Gauss–Newton step overshooting a kink.)
    """
    t0 = time.perf_counter()
    deadline = None if max_wall_s is None else t0 + float(max_wall_s)
    measured = np.asarray(measured, float)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    x0 = np.clip(np.asarray(x0, float), lower, upper)
    p, n = x0.size, measured.size
    count = [0]

    def check() -> None:
        if cancel is not None and cancel():
            raise CalibrationStopped("stopped by the user", "stopped")
        if deadline is not None and time.perf_counter() > deadline:
            raise CalibrationStopped(f"stopped at the wall-time budget of {max_wall_s:g} s", "budget")

    def residual(x: np.ndarray) -> np.ndarray:
        check()
        r = np.asarray(simulate(x), float) - measured
        count[0] += 1  # simulations done (a budget may stop the calibration between two)
        return r

    def many(base: np.ndarray, points: list[np.ndarray]) -> np.ndarray:
        check()
        if simulate_many is None:
            out = []
            for q in points:
                check()
                out.append(np.asarray(simulate(q), float))
                count[0] += 1
            return np.array(out)
        values = [np.asarray(v, float) for v in simulate_many(base, points)]
        count[0] += len(points)
        return np.array(values)

    x, best_r = x0.copy(), None
    status, message = "", ""
    iteration = 0
    ident = Identifiability(np.zeros(0), float("nan"))
    members: list[list[int]] = [[j] for j in range(p)]
    A: np.ndarray | None = np.zeros((n, 0))
    last_step = np.zeros(0)
    sigma = float("nan")
    err = np.zeros(n)
    rmse0 = float("nan")
    try:
        r = residual(x)
        best_r = r
        rmse0 = float(np.sqrt(np.mean(r * r)))
        scale_m = max(float(np.max(np.abs(measured))) if n else 1.0, 1e-300)
        e = simulation_error() if callable(simulation_error) else simulation_error
        if e is None:
            e = DEFAULT_REL_ERROR * scale_m
        err = np.broadcast_to(np.nan_to_num(np.asarray(e, float), nan=0.0), (n,)).copy()
        sigma = float(np.sqrt(data_resolution**2 + float(np.max(err, initial=0.0)) ** 2)) or 1e-12 * scale_m
        cost = 0.5 * float(r @ r)
        damping = 0.0

        def report() -> None:
            if progress is not None:
                progress(CalibrationProgress(iteration, count[0], cost, float(np.sqrt(np.mean(r * r))),
                                             time.perf_counter() - t0, len(members), damping, x=x.copy()))

        report()
        h = float(np.clip((3.0 * float(np.max(err, initial=0.0)) / scale_m) ** (1.0 / 3.0), MIN_DIFF_STEP, diff_step))
        first_damping = True
        A, fresh = None, False  # fresh: A was measured at x (not Broyden-updated since)

        def directions() -> np.ndarray:
            D = np.zeros((p, len(members)))
            for k, m in enumerate(members):
                D[m, k] = 1.0
            return D

        def rel_change(x_new: np.ndarray) -> np.ndarray:
            """The step actually taken (after clipping), per direction, relative to the scales."""
            d = (x_new - x) / np.maximum(np.abs(x), 1e-300)
            return np.array([float(np.mean(d[m])) for m in members])

        def moved(step: np.ndarray) -> np.ndarray:
            return np.clip(x * (1.0 + D @ step), lower, upper)

        while True:
            if iteration >= max_iterations:
                status = "max_iterations"
                break
            own = jacobian(x) if (A is None and jacobian is not None) else None
            measured_now = A is None
            if measured_now:  # the columns along each direction (relative change of its members)
                D = directions()
            if measured_now and own is not None:  # the simulator's own derivative
                A = (np.asarray(own, float) * x) @ D / sigma
                fresh, A_updated, updates = True, False, 0
            elif measured_now:  # central differences
                sides = [np.clip(x * (1.0 + sign * h * D[:, k]), lower, upper)
                         for k in range(len(members)) for sign in (1.0, -1.0)]
                span = np.array([rel_change(sides[2 * k])[k] - rel_change(sides[2 * k + 1])[k]
                                 for k in range(len(members))])
                run = [i for i, q in enumerate(sides) if np.any(q != x)]
                sims = np.tile(r + measured, (len(sides), 1))
                if run:
                    sims[run] = many(x, [sides[i] for i in run])
                A = np.zeros((n, len(members)))
                ok = np.abs(span) > 0
                A[:, ok] = ((sims[0::2] - sims[1::2]).T[:, ok] / span[ok]) / sigma  # σ per unit relative change
                fresh, A_updated, updates = True, False, 0
            assert A is not None
            if measured_now:
                if identify and not ident.singular_values.size:  # decided once, at the start point
                    def thr(q: int) -> float:
                        return identifiability_threshold(n, q, float(np.max(err, initial=0.0)), sigma, 2.0 * h)

                    ident.singular_values = np.linalg.svd(A, compute_uv=False)
                    ident.threshold = thr(len(members))
                    A, members = _reduce(A, members, thr, list(names), ident)
                if not members:
                    status = "unidentifiable"
                    break
                if first_damping:
                    damping, first_damping = initial_damping * float(np.max(np.diag(A.T @ A))), False
            D = directions()
            g = A.T @ (r / sigma)
            gauss_newton, outcome, remeasure = True, "", False
            while not outcome:
                mu = 0.0 if gauss_newton else damping
                free = list(range(len(members)))
                while True:  # leave out directions pushing against a bound they sit on
                    Af = A[:, free]
                    M = Af.T @ Af + mu * np.eye(len(free))
                    try:
                        du = np.linalg.solve(M, -g[free])
                    except np.linalg.LinAlgError:
                        du = np.linalg.lstsq(M, -g[free], rcond=None)[0]
                    out = [free[i] for i, d in enumerate(du) if
                           (d > 0 and np.all(x[members[free[i]]] >= upper[members[free[i]]])) or
                           (d < 0 and np.all(x[members[free[i]]] <= lower[members[free[i]]]))]
                    if not out:
                        break
                    free = [k for k in free if k not in out]
                    if not free:
                        break
                if not free:
                    outcome = "at_bounds" if fresh else "remeasure"
                    break
                step = np.zeros(len(members))
                step[free] = du
                if gauss_newton:  # converged when even the undamped step changes nothing measurable
                    last_step = step
                    change = float(np.max(np.abs(A @ step))) if n else 0.0
                    if change <= STEP_TOL or (xtol is not None and float(np.max(np.abs(step))) <= xtol):
                        outcome = "converged" if fresh else "remeasure"
                        break
                    gauss_newton = damping == 0.0
                    if not gauss_newton:
                        continue
                x_try = moved(step)
                r_try = residual(x_try)
                cost_try = 0.5 * float(r_try @ r_try)
                predicted = -float(g[free] @ du) - 0.5 * float(du @ (Af.T @ Af) @ du)  # in σ² units
                if not (np.isfinite(cost_try) and cost_try < cost) and not A_updated:
                    # measured columns, yet the step overshoots: the cost along it bends (a curved
                    # valley). One more simulation at the minimum of the parabola through the cost
                    # here, its slope and the cost at the step's end, before damping turns the step
                    slope = float(r @ (sigma * (A @ step)))
                    bend = cost_try - cost - slope if np.isfinite(cost_try) else np.inf
                    t = float(np.clip(-slope / (2.0 * bend), 0.1, 0.5)) if bend > 0 and slope < 0 else 0.5
                    x_line = moved(t * step)
                    r_line = residual(x_line)
                    if 0.5 * float(r_line @ r_line) < cost:
                        x_try, r_try, cost_try = x_line, r_line, 0.5 * float(r_line @ r_line)
                        predicted = -t * float(g[free] @ du) - 0.5 * t * t * float(du @ (Af.T @ Af) @ du)
                rho = (cost - cost_try) / sigma**2 / predicted if predicted > 0 else -1.0
                if np.isfinite(cost_try) and cost_try < cost:
                    taken = rel_change(x_try)
                    A_updated = not fresh
                    if taken @ taken > 0:  # Broyden's update of the columns along the step taken
                        A = A + np.outer((r_try - r) / sigma - A @ taken, taken) / (taken @ taken)
                    x, r, cost = x_try, r_try, cost_try
                    best_r = r
                    fresh = False
                    if damping > 0.0:  # Marquardt's update: a tenth after a success
                        damping /= 10.0
                        damping = 0.0 if damping < MIN_DAMPING * float(np.max(np.diag(A.T @ A))) else damping
                    outcome = "accepted"
                    updates += 1
                    if (rho < POOR_PREDICTION and A_updated) or updates >= MAX_UPDATES:
                        remeasure = True  # the updated columns predict badly, or have drifted long enough
                    A_updated = True
                elif A_updated:  # updated columns misled the step: measure them again first
                    outcome = "remeasure"
                else:
                    damping = damping * 10.0 if damping > 0.0 else DAMPING_START * float(np.max(np.diag(A.T @ A)))
                    gauss_newton = False
                    if damping > MAX_DAMPING * float(np.max(np.diag(A.T @ A))):
                        outcome = "stalled"
            if outcome == "remeasure" or remeasure:
                A = None
            if outcome == "remeasure":
                continue
            if outcome != "accepted":
                status = outcome
                break
            iteration += 1
            report()
    except CalibrationStopped as stop:
        status, message = stop.status, str(stop)
    seconds = time.perf_counter() - t0
    if best_r is None:  # stopped before the start point was simulated
        best_r = np.full(n, np.nan)
        cost = float("nan")
    r = best_r
    # confidence and accuracy in the fitted directions (the last Jacobian, taken at x unless stopped)
    std = np.full(p, np.nan)
    half = np.full(p, np.nan)
    acc = np.full(p, np.nan)
    corr = np.full((p, p), np.nan)
    if A is not None and A.shape[1] == len(members) and members and np.all(np.isfinite(r)):
        s_u, half_u, corr_u = confidence(A * sigma, r)
        pinv = np.linalg.pinv(A)
        bound_u = np.abs(pinv) @ (err / sigma + data_resolution / sigma)
        if last_step.size == len(members):
            bound_u = bound_u + np.abs(last_step)
        for k, m in enumerate(members):
            for j in m:
                std[j] = abs(x[j]) * s_u[k]
                half[j] = abs(x[j]) * half_u[k]
                acc[j] = abs(x[j]) * bound_u[k]
                for k2, m2 in enumerate(members):
                    for j2 in m2:
                        corr[j, j2] = corr_u[k, k2]
    if not message:
        message = STATUS_TEXT.get(status, status).format(tol=STEP_TOL, iterations=max_iterations)
    if ident.fixed or ident.groups:
        message += "; " + "; ".join(ident.lines())
    metrics = fit_metrics(r + measured, measured)
    return CalibrationResult(
        names=list(names), x0=x0, x=x, std=std, ci95=np.stack([x - half, x + half], axis=1), residuals=r,
        rmse=metrics["rmse"], max_abs_error=metrics["max_abs_error"], cost=cost, evaluations=count[0],
        success=status in ("converged", "at_bounds"), message=message, correlation=corr, rmse_initial=rmse0,
        status=status, iterations=iteration, identifiability=ident if identify else None, sigma=sigma,
        accuracy=acc, seconds=seconds)
