"""Imported OpenSim models: muscle paths at one pose beside OpenSim 4.6, the knee's force evaluation,
and the kernels' first-use compile time (issue 16 item 6).

Figures (each needs ../shared/models, or ``JOINTMODELLER_SHARED``; a missing model drops its figure):
- paths_ms_rajagopal: Rajagopal2016's 80 paths, lengths and moment arms about every leg coordinate
  (hip, knee, ankle, subtalar, mtp; both sides; coupled coordinates follow) at one pose, in the
  default OpenSim path mode, from the coordinates (kinematics included); baseline OpenSim 4.6 doing
  the same in the same run (``GeometryPath.getLength`` and ``computeMomentArm`` per path and
  coordinate after ``realizePosition``) when ``opensim`` is importable, else none. The note gives the
  largest differences from OpenSim's numbers at that pose.
- paths_ms_gait2392: the same on gait2392 (92 paths, moving path points).
- knee_force_eval_ms_lenhart: the lenhart2015 knee's force evaluation on the tree (generalized forces
  of every force element at rest: 120 paths over cylinders, ellipsoids and spheres, ligaments;
  imported without meshes, so no contact); baseline the same evaluation with its paths solved one
  path per kernel call (``calc_path`` in a Python loop).
- first_use_compile_s: a fresh process computing gait2392's paths once with an empty kernel cache
  (every kernel compiled: the tree's kinematics, the path kernel, the wrap solvers); baseline the same
  process with the cache that run left (kernels loaded from disk).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from jointmodeller.bench.harness import Figure, time_call

LEG = ("hip_flexion", "hip_adduction", "hip_rotation", "knee_angle", "ankle_angle", "subtalar_angle", "mtp_angle")
POSES_DEG = {  # one pose per model, wrap objects in use
    "Rajagopal2016": {"hip_flexion_r": 30.0, "knee_angle_r": 60.0, "ankle_angle_r": 10.0,
                      "hip_flexion_l": -10.0, "knee_angle_l": 20.0, "ankle_angle_l": -10.0},
    "gait2392_thelen2003muscle": {"hip_flexion_r": 30.0, "knee_angle_r": -60.0, "ankle_angle_r": 10.0,
                                  "hip_flexion_l": -10.0, "knee_angle_l": -20.0, "ankle_angle_l": -10.0},
}


def _shared() -> Path:
    here = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("JOINTMODELLER_SHARED", here.parent / "shared"))


def _opensim():
    try:
        import opensim  # noqa: F401 - optional peer
    except ImportError:
        return None
    try:  # its log goes to stdout, which carries `jointmodeller bench --json`
        opensim.Logger.setLevelString("off")
    except AttributeError:  # pragma: no cover - older bindings
        pass
    return opensim


def _geometry_path(osim, force):
    for cls in ("PathActuator", "Ligament", "PathSpring"):
        obj = getattr(osim, cls).safeDownCast(force)
        if obj:
            return obj.getGeometryPath()
    return None


def _ours(path: Path, pose_deg: dict):
    """(timed function, coordinates, attachment names, q) for one model's paths at the pose."""
    from jointmodeller.core.studies import muscle_paths as mp
    from jointmodeller.io.osim import load_osim

    project, _ = load_osim(path, load_meshes=False)
    model = mp.build_multibody(project)
    dependent = {dep for dep, _, _ in model.couplers}
    coords = [c for c in model.qindex if c.rsplit("_", 1)[0] in LEG and model.qindex[c] not in dependent]
    q = model.q0.copy()
    for name, deg in pose_deg.items():
        q[model.qindex[name]] = np.radians(deg)
    q = model.apply_couplers(q)
    specs = [mp.path_spec(model, a, project.wrap_objects) for a in project.attachments]
    packed = mp.pk.pack_paths(specs)

    def run():
        return mp.paths_at_pose(model, packed, q, coords, opensim_stale_wrap_points=True)[:2]

    return run, coords, [s.name for s in specs], q


def _opensim_side(osim, path: Path, pose_deg: dict, coords: list[str], names: list[str]):
    """(timed function returning lengths (P,), moment arms (P, m)) for OpenSim on the same work."""
    m = osim.Model(str(path))
    state = m.initSystem()
    cs = m.getCoordinateSet()
    for name, deg in pose_deg.items():
        cs.get(name).setValue(state, float(np.radians(deg)), False)
    m.assemble(state)
    fs = m.getForceSet()
    gps = [_geometry_path(osim, fs.get(n)) for n in names]
    cc = [cs.get(c) for c in coords]
    first = cc[0]

    def lengths():
        v = first.getValue(state)
        first.setValue(state, v, False)  # invalidates the state's position cache: paths are recomputed
        m.realizePosition(state)
        return np.array([gp.getLength(state) for gp in gps])

    def run():
        L = lengths()
        MA = np.array([[gp.computeMomentArm(state, c) for c in cc] for gp in gps])
        return L, MA

    return run, lengths


def _paths_figure(key: str, model_file: str, osim) -> Figure | None:
    path = _shared() / "models" / "opensim-models" / f"{model_file}.osim"
    if not path.is_file():
        return None
    pose = POSES_DEG[model_file]
    ours, coords, names, _ = _ours(path, pose)
    L, MA = ours()  # compiled (or loaded from the cache) before timing
    t_ours = time_call(ours, repeat=7, number=3)
    note = f"{len(names)} paths x {len(coords)} coordinates at {', '.join(f'{k} {v:g}' for k, v in pose.items())} deg"
    base = None
    if osim is not None:
        theirs, their_lengths = _opensim_side(osim, path, pose, coords, names)
        Lo, MAo = theirs()
        base = time_call(theirs, repeat=5, number=1)
        note += (f"; vs OpenSim 4.6: max |dL| {1e3 * np.abs(L - Lo).max():.2g} mm, "
                 f"max |dr| {1e3 * np.abs(MA - MAo).max():.2g} mm; OpenSim's lengths alone "
                 f"{1e3 * time_call(their_lengths, repeat=5, number=1):.3g} ms")
    else:
        note += "; OpenSim not importable: no baseline"
    return Figure(key, 1e3 * t_ours, "ms", None if base is None else 1e3 * base,
                  "OpenSim 4.6, same model, pose and work", True, note)


def _knee_figure() -> Figure | None:
    path = _shared() / "models" / "lenhart2015" / "lenhart2015.osim"
    if not path.is_file():
        return None
    from jointmodeller.app.mobilized import build_mobilized
    from jointmodeller.core.studies import muscle_paths as mp
    from jointmodeller.core.studies.tree_equilibrium import generalized_forces_at_rest
    from jointmodeller.io.osim import load_osim

    project, _ = load_osim(path, load_meshes=False)
    mob = build_mobilized(project, contact=False)
    system = mob.model.system
    q = mob.model.q0.copy()
    Q = generalized_forces_at_rest(system, 0.0, q)
    t_fast = time_call(lambda: generalized_forces_at_rest(system, 0.0, q), repeat=7, number=5)
    providers = [p for p in _path_providers(mob.built) if isinstance(p, mp.AnalyticPathProvider)]
    n_paths = sum(len(p.paths) for p in providers)
    for p in providers:  # the naive way: one kernel call per path
        p.wrapped_paths = _one_at_a_time(p)
    Q1 = generalized_forces_at_rest(system, 0.0, q)
    t_slow = time_call(lambda: generalized_forces_at_rest(system, 0.0, q), repeat=5, number=2)
    for p in providers:
        del p.wrapped_paths
    note = (f"{len(q)} coordinates, {n_paths} routed paths, no contact (imported without meshes); "
            f"the two evaluations differ by {np.abs(Q - Q1).max():.2g} (largest |Q| {np.abs(Q).max():.3g})")
    return Figure("knee_force_eval_ms_lenhart", 1e3 * t_fast, "ms", 1e3 * t_slow,
                  "same evaluation, one path per kernel call (calc_path loop)", True, note)


def _path_providers(built):
    """The path providers of a built mechanical system (its own, or the parts of a combined one)."""
    top = built.system.path_provider
    return [p for _, p in getattr(top, "parts", [])] or [top]


def _one_at_a_time(provider):
    """wrapped_paths of ``provider`` computed path by path (the provider's own code on one row)."""
    from jointmodeller.core.mechanics.tissues import TissueGeometry, WrappedPath

    cls_method = type(provider).wrapped_paths

    def wrapped_paths(t, kin, index):
        parts = [cls_method(provider, t, kin, np.array([r], np.int64)) for r in np.asarray(index, np.int64)]
        g = [p.geometry for p in parts]
        geo = TissueGeometry(*(np.concatenate([getattr(x, f) for x in g]) for f in
                               ("length", "length_rate", "point_a_G", "point_b_G", "dir_a_G", "dir_b_G")))
        xb = [p.extra_body for p in parts]
        xt = [p.extra_tissue + j for j, p in enumerate(parts)]
        return WrappedPath(np.asarray(index, np.int64), geo, np.concatenate(xb).astype(np.int64),
                           np.concatenate(xt).astype(np.int64), np.concatenate([p.extra_point_G for p in parts]),
                           np.concatenate([p.extra_dir_G for p in parts]))

    return wrapped_paths


COMPILE_SCRIPT = """
import time
t0 = time.perf_counter()
import numpy as np
from jointmodeller.core.studies import muscle_paths as mp
from jointmodeller.io.osim import load_osim
project, _ = load_osim({path!r}, load_meshes=False)
model = mp.build_multibody(project)
specs = [mp.path_spec(model, a, project.wrap_objects) for a in project.attachments]
t1 = time.perf_counter()
mp.paths_at_pose(model, mp.pk.pack_paths(specs), model.q0, list(model.qindex), True)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _compile_figure() -> Figure | None:
    path = _shared() / "models" / "opensim-models" / "gait2392_thelen2003muscle.osim"
    if not path.is_file():
        return None
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)

        def once():
            done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT.format(path=str(path))], env=env,
                                  capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise RuntimeError(done.stderr[-500:])
            load_s, paths_s = (float(x) for x in done.stdout.split())
            return load_s + paths_s, load_s, paths_s

        t0 = time.perf_counter()
        cold, cold_load, cold_paths = once()
        wall = time.perf_counter() - t0
        warm, warm_load, warm_paths = once()
    note = (f"import + load + first paths_at_pose in a fresh process; cold: loading the model (tree kinematics) "
            f"{cold_load:.1f} s, first paths {cold_paths:.1f} s; warm: {warm_load:.1f} s and {warm_paths:.2f} s; "
            f"process wall time {wall:.1f} s cold")
    return Figure("first_use_compile_s", cold, "s", warm, "same, kernels loaded from the disk cache", True, note)


def run() -> list[Figure]:
    osim = _opensim()
    out = [_paths_figure("paths_ms_rajagopal", "Rajagopal2016", osim),
           _paths_figure("paths_ms_gait2392", "gait2392_thelen2003muscle", osim),
           _knee_figure(), _compile_figure()]
    return [f for f in out if f is not None]
