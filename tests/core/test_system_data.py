"""A built System stays constant when evaluated; what evaluations reuse lives in core.data.SystemData
(MuJoCo's mjData beside mjModel): contact candidate sets and reference poses, warm-started wrap
paths, the latest results. Checked on the demo elbow, which has both cartilage contact and ligaments
wrapped over the bone meshes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from jointmodeller.core.data import SystemData, active, using
from jointmodeller.core.geometry.wrapping.taut_path import TautOptions

WRAP_RTOL = 10 * TautOptions().tol
"""Forces of wrapped tissues solved from different warm starts agree to their solver's tolerance."""


@pytest.fixture(scope="module")
def demo_built():
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.demo import build_demo_project

    return build_mechanical_system(build_demo_project())


def _poses(built, count=3, seed=4):
    """The demo's start and small moves of its forearm (within the contact band: the reuse paths run)."""
    rng = np.random.default_rng(seed)
    y0 = built.state.y
    n = built.system.n_bodies
    ys = [y0]
    for _ in range(count - 1):
        y = y0.copy()
        y[: 3 * n] += rng.normal(scale=2e-5, size=3 * n)
        ys.append(y)
    return ys


def _fingerprint(obj, depth=2, seen=None):
    """Attribute identities and array contents of obj and of the jointmodeller objects it holds."""
    seen = set() if seen is None else seen
    if id(obj) in seen or not hasattr(obj, "__dict__"):
        return None
    seen.add(id(obj))
    out = {}
    for key, value in vars(obj).items():
        if isinstance(value, np.ndarray):
            out[key] = (id(value), value.tobytes())
        elif isinstance(value, (dict, list, tuple)):
            out[key] = (id(value), len(value))
        else:
            out[key] = id(value)
        if depth and type(value).__module__.startswith("jointmodeller"):
            out[key, "inner"] = _fingerprint(value, depth - 1, seen)
        if depth and isinstance(value, dict):
            for k, v in value.items():
                if type(v).__module__.startswith("jointmodeller"):
                    out[key, k] = _fingerprint(v, depth - 1, seen)
    return out


def test_evaluating_the_system_changes_none_of_its_elements(demo_built):
    """Evaluating the system at new poses, in new evaluation data, changes no attribute of any force
    element or path solver. Lazily derived geometry (cached properties such as a surface's bounding
    sphere: functions of the constant meshes, computed on first use) may appear; nothing that was
    there changes."""
    system = demo_built.system
    elements = system.force_elements() + [system.path_provider]
    assert any(type(e).__name__ == "ContactPair" for e in elements)
    with using():
        system.derivative(0.0, demo_built.state.y)  # lazily derived geometry
    before = [_fingerprint(e) for e in elements]
    with using() as data:
        for y in _poses(demo_built):
            system.derivative(0.0, y)
        assert data._work, "the evaluations kept their reuse data in the SystemData"
    after = [_fingerprint(e) for e in elements]
    for b, a in zip(before, after):
        _assert_kept(b, a)


def _assert_kept(before, after, path=""):
    """Every entry of ``before`` is in ``after`` unchanged (``after`` may hold more)."""
    if isinstance(before, dict):
        assert isinstance(after, dict), path
        for key, value in before.items():
            assert key in after, f"{path}/{key} disappeared"
            _assert_kept(value, after[key], f"{path}/{key}")
    else:
        assert before == after, f"{path} changed"


def test_a_fresh_system_data_evaluates_cold_and_gives_the_same_forces(demo_built):
    system = demo_built.system
    pair = next(e for e in system.extra_elements if type(e).__name__ == "ContactPair")
    ys = _poses(demo_built)
    with using():
        warm = [system.derivative(0.0, y) for y in ys]  # the later ones reuse the first one's data
        assert pair.last_result is not None
    with using():
        assert pair.last_result is None  # nothing carried over
        cold = [system.derivative(0.0, y) for y in reversed(ys)][::-1]
    # contact reuse is exact (core.mechanics.contact); a wrap path started warm or cold converges to
    # the same shortest path to its solver's tolerance (vertex steps below TautOptions.tol of the
    # span), which bounds the end directions, hence the forces, to ~tol relative
    for a, b in zip(warm, cold):
        np.testing.assert_allclose(a, b, rtol=WRAP_RTOL, atol=WRAP_RTOL * np.abs(a).max())


def test_two_threads_on_one_system_keep_their_data_apart(demo_built):
    system = demo_built.system
    ys = _poses(demo_built, count=4, seed=9)
    with using():
        serial = [system.derivative(0.0, y) for y in ys]
    results: dict[int, list] = {}
    datas: dict[int, SystemData] = {}

    def run(k: int) -> None:
        datas[k] = active()  # each thread its own SystemData without asking
        results[k] = [system.derivative(0.0, y) for y in ys]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert datas[0] is not datas[1] and datas[0] is not active()
    for k in range(2):
        for a, b in zip(results[k], serial):
            np.testing.assert_allclose(a, b, rtol=WRAP_RTOL, atol=WRAP_RTOL * np.abs(b).max())


def test_an_evaluation_at_the_same_pose_reuses_the_springs_and_paths_but_not_the_speeds(demo_built, monkeypatch):
    """Contact springs and wrapped paths depend on the pose alone: an evaluation that changes only the
    speeds (an implicit integrator's Jacobian column, a damping matrix) reuses those of the previous
    evaluation instead of searching the surfaces and solving the paths again, and gives the forces a
    fresh evaluation gives at that state; any change of pose searches and solves again."""
    from jointmodeller.core.mechanics.contact import ContactPair
    from jointmodeller.core.mechanics.wrapped_tissue import TissuePath

    system = demo_built.system
    counts = {"springs": 0, "paths": 0}
    springs, solve = ContactPair._springs, TissuePath.__call__

    def counted_springs(self, *args, **kwargs):
        counts["springs"] += 1
        return springs(self, *args, **kwargs)

    def counted_solve(self, *args, **kwargs):
        counts["paths"] += 1
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(ContactPair, "_springs", counted_springs)
    monkeypatch.setattr(TissuePath, "__call__", counted_solve)
    y0 = _poses(demo_built, count=2)[1]
    n_q = system.n_bodies * 7
    y1 = y0.copy()
    y1[n_q:] += np.random.default_rng(5).normal(scale=0.05, size=len(y1) - n_q)  # speeds only
    assert len(y1) - n_q == system.n_bodies * 6
    with using():
        system.derivative(0.0, y0)
        searched = dict(counts)
        assert searched["springs"] > 0 and searched["paths"] > 0
        reused = system.derivative(0.0, y1)
        assert counts == searched, "the same pose: nothing searched or solved again"
        y2 = y1.copy()
        y2[0] += 1e-9  # any change of pose
        system.derivative(0.0, y2)
        assert counts["springs"] > searched["springs"] and counts["paths"] > searched["paths"]
    with using():
        fresh = system.derivative(0.0, y1)
    assert not np.allclose(reused, system.derivative(0.0, y0)), "the speeds changed the derivative"
    np.testing.assert_allclose(reused, fresh, rtol=WRAP_RTOL, atol=WRAP_RTOL * np.abs(fresh).max())


def test_paths_are_reused_only_for_the_rows_solved_at_that_pose(demo_built, monkeypatch):
    """A linearisation differentiates some wrapped rows alone: after a pose change only the rows solved
    at the new pose are reused there, the others are solved (not taken from the previous pose)."""
    from jointmodeller.core.mechanics.wrapped_tissue import TissuePath

    system = demo_built.system
    provider = system.path_provider
    rows = np.array(sorted(provider.paths), np.int64)
    assert len(rows) >= 2
    solves = []
    solve = TissuePath.__call__

    def counted(self, *args, **kwargs):
        solves.append(self)
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(TissuePath, "__call__", counted)
    y0, y1 = _poses(demo_built, count=2)
    kin0, kin1 = system.kinematics(y0), system.kinematics(y1)
    with using():
        provider.wrapped_paths(0.0, kin0, rows)
        provider.wrapped_paths(0.0, kin1, rows[:1])  # one row at the new pose
        solves.clear()
        mixed = provider.wrapped_paths(0.0, kin1, rows)
        assert len(solves) == len(rows) - 1, "the other rows are solved at the new pose"
    with using():
        fresh = provider.wrapped_paths(0.0, kin1, rows)
    np.testing.assert_allclose(mixed.geometry.length, fresh.geometry.length, rtol=WRAP_RTOL)
