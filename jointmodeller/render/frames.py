"""Turn a stored run (or a live sample of one) into scene frames: poses of every mass's L frame and
tissue forces per sample. Qt-free, numpy only.

Poses come from the run's one pose encoding, ``run.poses`` (model.results.BodyPoses: p_G and q_GB
of each body frame B, with B in L), turned into mesh frames by app.run_poses.mesh_frames; a mass
the run does not pose (a laxity sweep poses its moving body only) is drawn at its initial pose.
Series read: "time" (k,) or a laxity run's "load", "tissue_force_N" (k, m) or a laxity run's
"tissue_tension_N"; "contact_points_G"/"contact_pressure_Pa" are not series (ragged) and are shown
only live.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.model.results import BodyPoses, RunRecord
from jointmodeller.model.specs import Project
from jointmodeller.render.scene_frame import SceneFrame

TISSUE_LABEL_KEYS = ("tissue_force_N", "tissue", "tissues", "attachments")


@dataclass
class RunFrames:
    """Per-sample poses (R_GL (k, n, 3, 3), t_G (k, n, 3)) of named masses and tissue forces (k, m)."""

    times: np.ndarray
    names: list[str]
    R_GL: np.ndarray
    t_G: np.ndarray
    tissue_force_N: np.ndarray | None = None
    axis_name: str = "t"
    axis_unit: str = "s"

    def label(self, i: int) -> str:
        """Caption of sample i, e.g. ``t = 0.250 s`` or ``load = 40 N``."""
        i = int(np.clip(i, 0, len(self) - 1))
        return f"{self.axis_name} = {self.times[i]:.4g} {self.axis_unit}".strip()

    def __len__(self) -> int:
        return int(self.times.shape[0])

    def frame(self, i: int) -> SceneFrame:
        i = int(np.clip(i, 0, len(self) - 1))
        poses = {n: (self.R_GL[i, j], self.t_G[i, j]) for j, n in enumerate(self.names)}
        force = None if self.tissue_force_N is None else self.tissue_force_N[i]
        return SceneFrame(poses=poses, tissue_force_N=force, time=float(self.times[i]))


def _labels(run: RunRecord, keys: tuple[str, ...], n: int, fallback: list[str]) -> list[str]:
    for k in keys:
        lab = run.labels.get(k)
        if lab is not None and len(lab) == n:
            return list(lab)
    return fallback[:n] if len(fallback) >= n else [f"#{i}" for i in range(n)]


def frames_from_run(project: Project, run: RunRecord) -> RunFrames | None:
    """The frames of a stored run, or None when it holds no body poses (e.g. a coordinate sweep).

    The run's bodies are drawn where its poses put them, every other mass at its initial pose (a
    laxity sweep poses its moving body only); a laxity run's samples are its load steps."""
    from jointmodeller.app.picking import mass_pose
    from jointmodeller.app.run_poses import mesh_frames

    if run.poses is None:
        return None
    s = run.series
    R_run, t_run = mesh_frames(run.poses)
    k = run.poses.n_samples
    names = list(run.poses.bodies)
    others = [m for m in project.masses if m.name not in run.poses.bodies]
    if others:
        fixed = [mass_pose(m) for m in others]
        R = np.concatenate([R_run, np.broadcast_to(np.array([f[0] for f in fixed]), (k, len(others), 3, 3))], axis=1)
        t = np.concatenate([t_run, np.broadcast_to(np.array([f[1] for f in fixed]), (k, len(others), 3))], axis=1)
        names += [m.name for m in others]
    else:
        R, t = R_run, t_run
    laxity = run.study == "laxity" and "load" in s
    axis = "load" if laxity else "time"
    times = np.asarray(s.get(axis, np.arange(k, dtype=float)), float).reshape(-1)[:k]
    key = "tissue_tension_N" if laxity else "tissue_force_N"
    force = s.get(key)
    if force is not None:
        force = _project_order(project, run, key, np.asarray(force, float).reshape(k, -1))
    if laxity:
        unit = "N" if run.parameters.get("load_kind") != "internal_external" else "N·m"
        return RunFrames(times=times, names=names, R_GL=R, t_G=t, tissue_force_N=force, axis_name="load",
                         axis_unit=unit)
    return RunFrames(times=times, names=names, R_GL=R, t_G=t, tissue_force_N=force)


def _project_order(project: Project, run: RunRecord, key: str, force: np.ndarray) -> np.ndarray | None:
    """Tissue forces (k, m) of series ``key`` in the order of the project's attachments, when the
    run's labels name them all; else as stored (a live sample without labels), or None when they
    name other tissues (the project changed since the laxity run)."""
    labels = _labels(run, (key,) + TISSUE_LABEL_KEYS, force.shape[1], [a.name for a in project.attachments])
    order = {a.name: j for j, a in enumerate(project.attachments)}
    if all(lab in order for lab in labels) and len(labels) == len(order):
        ordered = np.zeros_like(force)
        ordered[:, [order[lab] for lab in labels]] = force
        return ordered
    return None if key == "tissue_tension_N" else force


def frame_from_sample(project: Project, sample: object) -> SceneFrame | None:
    """A live sample sent by a study's progress callback: a SceneFrame, a dict with the pose of one
    sample ("poses": BodyPoses) and series without the sample axis (e.g. "tissue_force_N" (m,)), or
    None."""
    if isinstance(sample, SceneFrame):
        return sample
    if isinstance(sample, dict):
        poses = sample.get("poses")
        if not isinstance(poses, BodyPoses):
            return None
        ragged = ("tissue_paths_G", "contact_points_G", "contact_pressure_Pa", "labels", "time", "poses")
        series = {k: np.asarray(v)[None] for k, v in sample.items()
                  if k not in ragged and isinstance(v, (np.ndarray, list, tuple))}
        given = sample.get("labels")
        labels = {k: list(v) for k, v in given.items()} if isinstance(given, dict) else {}
        run = RunRecord(study="live", series=series, labels=labels, poses=poses.take(slice(0, 1)))
        frames = frames_from_run(project, run)
        if frames is None:
            return None
        f = frames.frame(0)
        if "time" in sample:
            f.time = float(np.asarray(sample["time"]).reshape(-1)[0])
        if "contact_points_G" in sample:
            f.contact_points_G = np.asarray(sample["contact_points_G"], float)
            f.contact_pressure_Pa = np.asarray(sample.get("contact_pressure_Pa", np.zeros(len(f.contact_points_G))))
        if "tissue_paths_G" in sample:
            paths = [np.asarray(x, float) for x in sample["tissue_paths_G"]]
            names = labels.get("tissue_force_N")
            order = [a.name for a in project.attachments]
            if names is not None and sorted(names) == sorted(order) and len(names) == len(paths):
                where = {n: i for i, n in enumerate(names)}
                paths = [paths[where[n]] for n in order]
            f.tissue_paths_G = paths if len(paths) == len(order) else None
        return f
    return None


__all__ = ["RunFrames", "frame_from_sample", "frames_from_run"]
