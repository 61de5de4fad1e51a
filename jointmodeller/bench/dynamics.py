"""Benchmarks of the MJM dynamics core.

force_evals_per_s: tissue force evaluations per second (2 bodies, 20 tissue elements, mixed
axial/bushing), the compiled kernel vs a straightforward per-element Python loop (same laws).
numpy_force_evals_per_s: the vectorised numpy path vs the same loop.
rhs_evals_per_s: full state derivative (forces + Newton–Euler) per second vs the loop-based forces.
demo_realtime_factor: simulated seconds per wall second of the demo elbow as the project defines it
(contact and wrapping) with the app's integrator choice at 4 digits (Radau with contact) over its first
DEMO_WINDOW_S = 8 s from rest, each run time-boxed to BUDGET_S of wall time (so below real time the
figure covers the first part of the window, the stiffest: contact onset and the load's ramp);
baseline: the same model with straight tissues and no contact (what the core alone costs). Falls back
to the synthetic two-bone model without the demo.
demo_window_factor: the same over the whole window, not time-boxed (the onset and the settled joint
in their true proportions: below real time the time-boxed figure sees the onset only); baseline: the
same window with BDF, the app's choice at 5 digits and more (faster through the onset, but its orders
3-5 keep a stiff, lightly damped mode ringing once the joint has settled).
mujoco_demo_realtime_factor: the same, MuJoCo's (issue 17 item 6): the demo translated by
bench.mujoco_peer (SDF cartilage geoms, straight tension-only tendons with our laws, the same mass,
inertia, gravity and ramped valgus load; implicitfast at 0.5 ms), wall time of ``mj_step`` alone,
time-boxed the same; baseline: our demo_realtime_factor measured just before in the same run (ratio =
MuJoCo's lead; issue 17 asks for it below 1). The note gives MuJoCo's varus–valgus angle at full load
and whether the joint held. Skipped, with a note on demo_realtime_factor, when mujoco is not installed.
"""

from __future__ import annotations

import time

import numpy as np

from jointmodeller.bench.harness import Figure, time_call
from jointmodeller.core.mechanics.examples import random_tissue_system, two_bone_ligaments
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.tissues import AXIAL, TissueSet
from jointmodeller.core.multibody.integrate import report_times, simulate

BUDGET_S = 8.0  # wall-clock budget of each time-boxed simulation
BENCH_DIGITS = 4  # the runs' accuracy (1e-4: the window's interactive default)
WINDOW_BUDGET_S = 180.0  # wall-clock limit of each whole-window run (demo_window_factor)
#: the warm-up before each timed run: this much simulated time, or the step under way once this much
#: wall time has passed (the kernels it meets compiled or loaded by then), whichever ends first
WARM_UP_SIM_S = 2e-3
WARM_UP_WALL_S = 2.0
#: the demo's simulated window from rest (issue 17: "over the first 8 s from rest"): a run reaches its
#: end within the budget only at or above real time, so a faster engine is measured over more of it
DEMO_WINDOW_S = 8.0


def loop_forces(kin: BodyKinematics, ts: TissueSet, force_G: np.ndarray, torque_G: np.ndarray) -> None:
    """Baseline: the same tissue laws, one Python iteration per element with small numpy ops."""
    for e in range(ts.count):
        a, b = ts.body_a[e], ts.body_b[e]
        arm_a = kin.R_GB[a] @ ts.r_a_B[e]
        arm_b = kin.R_GB[b] @ ts.r_b_B[e]
        pa, pb = kin.p_G[a] + arm_a, kin.p_G[b] + arm_b
        va = kin.v_G[a] + np.cross(kin.w_G[a], arm_a)
        vb = kin.v_G[b] + np.cross(kin.w_G[b], arm_b)
        d = pb - pa
        if ts.model[e] == AXIAL:
            L = np.linalg.norm(d)
            u = d / L
            x = L - ts.rest_length[e]
            f = sum(k * np.sign(x) * abs(x) ** (i + 1) for i, k in enumerate(ts.coeffs[e, 0]))
            T = f + ts.damping[e, 0] * (u @ (vb - va))
            if ts.tension_only[e]:
                T = max(T, 0.0) if x > 0 else 0.0
            F = T * u
            app = pa
        else:
            R_GS = kin.R_GB[a] @ ts.R_AS[e]
            x = R_GS.T @ d - ts.rest_S[e]
            xd = R_GS.T @ (vb - va - np.cross(kin.w_G[a], d))
            f = np.array([sum(k * np.sign(x[j]) * abs(x[j]) ** (i + 1) for i, k in enumerate(ts.coeffs[e, j]))
                          for j in range(3)]) + ts.damping[e] * xd
            F = R_GS @ f
            app = pb
        force_G[a] += F
        torque_G[a] += np.cross(app - kin.p_G[a], F)
        force_G[b] -= F
        torque_G[b] -= np.cross(arm_b, F)


def _force_figures() -> list[Figure]:
    system, state = random_tissue_system(n_tissues=20)
    kin = system.kinematics(state.y)
    F = np.zeros((2, 3))
    T = np.zeros((2, 3))
    ts = system.tissues
    compiled = system.tissue_forces
    compiled.use_numba = True
    compiled.accumulate(0.0, kin, F, T)  # compile / load the cached kernel first
    from jointmodeller.core.mechanics.tissue_force import TissueForces

    plain = TissueForces(ts, use_numba=False)
    n = 2000
    t_numba = time_call(lambda: compiled.accumulate(0.0, kin, F, T), repeat=5, number=n)
    t_numpy = time_call(lambda: plain.accumulate(0.0, kin, F, T), repeat=3, number=200)
    t_loop = time_call(lambda: loop_forces(kin, ts, F, T), repeat=3, number=100)
    y = state.y
    t_rhs = time_call(lambda: system.derivative(0.0, y), repeat=5, number=500)
    return [
        Figure("force_evals_per_s", 1.0 / t_numba, "1/s", 1.0 / t_loop, "per-element Python loop",
               lower_is_better=False, note="2 bodies, 20 tissues (15 axial, 5 bushing), numba kernel; target >= 20000"),
        Figure("numpy_force_evals_per_s", 1.0 / t_numpy, "1/s", 1.0 / t_loop, "per-element Python loop",
               lower_is_better=False, note="vectorised numpy fallback path"),
        Figure("rhs_evals_per_s", 1.0 / t_rhs, "1/s", 1.0 / t_loop, "per-element Python loop (forces only)",
               lower_is_better=False, note="whole state derivative: forces, loads, gravity, Euler's equations"),
    ]


def _realtime(system, state, t_end: float, report_dt: float, method: str = "DOP853",
              budget_s: float = BUDGET_S) -> tuple[float, str]:
    from jointmodeller.core.data import using

    with using():  # compile (or load) the kernels first, in throw-away evaluation data: the run starts cold
        # a few steps, not one evaluation: the contact's certificate, list and record kernels first run
        # from the second evaluation on (a first one after a source change compiles them, seconds)
        warm_until = time.perf_counter() + WARM_UP_WALL_S
        simulate(system, state, state.t + WARM_UP_SIM_S, 10.0**-BENCH_DIGITS, None, method=method,
                 stop=lambda: time.perf_counter() > warm_until)
    with using():  # each run in its own evaluation data: none starts warm from an earlier one
        start = time.perf_counter()
        deadline = start + budget_s
        traj = simulate(system, state, t_end, 10.0**-BENCH_DIGITS, report_times(state.t, t_end, report_dt),
                        method=method, stop=lambda: time.perf_counter() > deadline)
        wall = time.perf_counter() - start
    simulated = float(traj.t[-1] - traj.t[0])
    return simulated / wall, (f"{method} {traj.status} at t={traj.t[-1]:.4g} s after {wall:.1f} s, "
                              f"{traj.n_steps} steps, {traj.n_rhs} evaluations")


def _mujoco_peer(project, ours: float) -> tuple[list[Figure], str]:
    """MuJoCo's figure on the same project beside ``ours`` (none when mujoco is absent) and a note for
    ours. A peer that fails to build or run leaves its message in the note, never hides our figure."""
    from jointmodeller.bench.mujoco_peer import mujoco_module, mujoco_realtime

    if mujoco_module() is None:
        return [], "MuJoCo peer skipped: mujoco is not installed (the peers extra)"
    try:
        r = mujoco_realtime(project, t_end=DEMO_WINDOW_S, budget_s=BUDGET_S)
    except Exception as exc:  # a broken peer must not hide our own figure
        return [], f"MuJoCo peer failed: {type(exc).__name__}: {exc}"
    lo, hi = r["measure_range"]
    angle = (f"{r['measure_name']} {r['measure']:.3g} (last tenth at full load: {lo:.3g} to {hi:.3g})"
             if r["load_scale"] >= 1.0 else f"full load not reached (scale {r['load_scale']:.2g})")
    summary = (f"MuJoCo {r['version']}: {r['realtime_factor']:.3g} sim s/wall s, {angle}, "
               f"joint {'held' if r['held'] else 'NOT held'}")
    note = (f"{summary}; {r['status']} at t={r['t_reached']:.4g} s after {r['steps']} steps of "
            f"{1e3 * r['timestep']:g} ms (implicitfast), whole loop with the driver's Python "
            f"{r['loop_factor']:.3g}; largest JCS translation {1e3 * r['max_translation_m']:.2g} mm, "
            f"{r['contacts']} contacts at the end; SDF cartilage (compiled in {r['compile_s']:.1f} s), straight "
            "tension-only tendons with our laws, MuJoCo soft contact (bench/mujoco_peer.py); "
            "ratio = MuJoCo's lead over ours")
    fig = Figure("mujoco_demo_realtime_factor", r["realtime_factor"], "sim s/wall s", ours,
                 "ours: demo_realtime_factor, same model, same run", lower_is_better=False, note=note)
    return [fig], summary


def _demo_figures() -> list[Figure]:
    try:
        from jointmodeller.app.build import AUTO_CONTACT_GEOMETRY, build_mechanical_system, resolve_contact_geometry
        from jointmodeller.app.demo import build_demo_project
        from jointmodeller.app.studies import choose_method

        project = build_demo_project()
        geometry = resolve_contact_geometry(AUTO_CONTACT_GEOMETRY, study="dynamics", tree=False)
        # as app.studies.run_dynamics builds: the app's contact geometry (auto: the face field)
        full = build_mechanical_system(project, free_path_shortcut=True, contact_geometry=geometry)
        bare = build_mechanical_system(project, contact=False, wrapping=False)
        window = DEMO_WINDOW_S
        auto = choose_method(project, digits=BENCH_DIGITS)
        value, note_full = _realtime(full.system, full.state, window, 1e-3, auto)
        explicit, note_explicit = _realtime(full.system, full.state, window, 1e-3, "DOP853")
        base, note_bare = _realtime(bare.system, bare.state, window, 1e-3)
        exact = build_mechanical_system(project, contact_geometry="exact", free_path_shortcut=True)
        on_exact, note_exact = _realtime(exact.system, exact.state, window, 1e-3, auto)
        whole, note_whole = _realtime(full.system, full.state, window, 1e-3, auto, WINDOW_BUDGET_S)
        whole_bdf, note_whole_bdf = _realtime(full.system, full.state, window, 1e-3, "BDF", WINDOW_BUDGET_S)
        peer, peer_note = _mujoco_peer(project, value)
        return [Figure("demo_realtime_factor", value, "sim s/wall s", base,
                       "demo with straight tissues, no contact", lower_is_better=False,
                       note=(f"demo elbow at 4 digits, the app's integrator and contact geometry (auto: {geometry}); "
                             f"full model: {note_full}; "
                             f"the same with DOP853: {explicit:.3g} ({note_explicit}); baseline: {note_bare}; "
                             f"peer: {peer_note}")),
                Figure("demo_window_factor", whole, "sim s/wall s", whole_bdf,
                       "the same window with BDF (the app's choice at 5 digits and more)", lower_is_better=False,
                       note=(f"the demo's whole first {window:g} s from rest, not time-boxed (limit "
                             f"{WINDOW_BUDGET_S:g} s), the app's integrator choice: {note_whole}; baseline: "
                             f"{note_whole_bdf}")),
                Figure("demo_realtime_factor_exact", on_exact, "sim s/wall s", value,
                       f"demo_realtime_factor: the same run on the app's geometry ({geometry})",
                       lower_is_better=False,
                       note=f"contact on the exact meshes (geometry 'exact', the reference): {note_exact}"),
                *peer]
    except ImportError:
        system, state = two_bone_ligaments(bushing_k=2e4)
        value, note = _realtime(system, state, 1.0, 1e-3)
        plain_system, plain_state = two_bone_ligaments(bushing_k=2e4, use_numba=False)
        base, _ = _realtime(plain_system, plain_state, 1.0, 1e-3)
        return [Figure("demo_realtime_factor", value, "sim s/wall s", base, "numpy tissue path",
                       lower_is_better=False, note=f"synthetic two-bone model (no demo): {note}")]


def run() -> list[Figure]:
    return [*_force_figures(), *_demo_figures()]
