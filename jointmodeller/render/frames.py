"""Turn a stored run (or a live sample of one) into scene frames: poses of every mass's L frame and
tissue forces per sample. Qt-free, numpy only.

Series understood (first axis = sample, names in ``run.labels``):
  "time" (k,); body poses as "mesh_R_GL" (k, n, 3, 3) with "mesh_origin_G" (k, n, 3) (vertex_G =
  origin + R_GL v_L: what app.studies stores), or "body_T_GL" (k, n, 4, 4), or "body_p_G" (k, n, 3) centre of mass
  with "body_q_GL" (k, n, 4) or "body_q_GB" (k, n, 4) quaternions (w, x, y, z) — with B the rotation
  R_BL of ``run.parameters["R_BL"]`` (n, 3, 3) when given, else B = L;
  "tissue_force_N" (k, m); "contact_points_G"/"contact_pressure_Pa" are not series (ragged) and are
  shown only live.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core.spatial_math import quat_to_matrix
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project
from jointmodeller.render.scene import SceneFrame

BODY_LABEL_KEYS = ("mesh_R_GL", "mesh_origin_G", "body", "bodies", "body_p_G", "body_q_GB", "body_q_GL", "body_T_GL",
                   "masses")
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


def poses_from_arrays(project: Project, names: list[str], p_G: np.ndarray, q: np.ndarray,
                      frame: str = "GL", R_BL: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(R_GL (..., n, 3, 3), t_G (..., n, 3)) from COM positions p_G (..., n, 3) and unit quaternions
    q (..., n, 4) of L (frame "GL") or of B (frame "GB", with R_BL (n, 3, 3)); x_G = p_G + R_GL (x_L − com_L)."""
    R = quat_to_matrix(np.asarray(q, float))
    if frame == "GB":
        if R_BL is not None:
            R = np.einsum("...nij,njk->...nik", R, np.asarray(R_BL, float))
    com_L = np.array([project.mass(n).com_L if n in {m.name for m in project.masses} else (0.0, 0.0, 0.0)
                      for n in names], float)
    t_G = np.asarray(p_G, float) - np.einsum("...nij,nj->...ni", R, com_L)
    return R, t_G


def frames_from_run(project: Project, run: RunRecord) -> RunFrames | None:
    """The frames of a stored run, or None when it holds no body poses (e.g. a laxity summary)."""
    s = run.series
    fallback = [m.name for m in project.masses]
    if "mesh_R_GL" in s and "mesh_origin_G" in s:
        R = np.asarray(s["mesh_R_GL"], float)
        t = np.asarray(s["mesh_origin_G"], float)
        k, n = R.shape[:2]
        names = _labels(run, BODY_LABEL_KEYS, n, fallback)
    elif "body_T_GL" in s:
        T = np.asarray(s["body_T_GL"], float)
        k, n = T.shape[:2]
        names = _labels(run, BODY_LABEL_KEYS, n, fallback)
        R, t = T[..., :3, :3], T[..., :3, 3]
    elif "body_p_G" in s and ("body_q_GL" in s or "body_q_GB" in s):
        p = np.asarray(s["body_p_G"], float)
        k, n = p.shape[:2]
        names = _labels(run, BODY_LABEL_KEYS, n, fallback)
        if "body_q_GL" in s:
            R, t = poses_from_arrays(project, names, p, s["body_q_GL"], "GL")
        else:
            R_BL = run.parameters.get("R_BL")
            R, t = poses_from_arrays(project, names, p, s["body_q_GB"], "GB",
                                     None if R_BL is None else np.asarray(R_BL, float))
    elif "moving_p_G" in s and "moving_q_GB" in s and run.parameters.get("moving_body") in fallback:
        return _laxity_frames(project, run)
    else:
        return None
    times = np.asarray(s.get("time", np.arange(k, dtype=float)), float).reshape(-1)[:k]
    force = s.get("tissue_force_N")
    if force is not None:
        force = np.asarray(force, float).reshape(k, -1)
        labels = _labels(run, TISSUE_LABEL_KEYS, force.shape[1], [a.name for a in project.attachments])
        order = {a.name: j for j, a in enumerate(project.attachments)}
        if all(lab in order for lab in labels) and len(labels) == len(order):
            ordered = np.zeros_like(force)
            ordered[:, [order[lab] for lab in labels]] = force
            force = ordered
    return RunFrames(times=times, names=names, R_GL=R, t_G=t, tissue_force_N=force)


def _laxity_frames(project: Project, run: RunRecord) -> RunFrames:
    """Frames of a laxity sweep: the moving body's pose per load step (B = principal axes of its
    inertia, as app.build makes it), every other mass at its initial pose."""
    from jointmodeller.app.picking import mass_pose
    from jointmodeller.core.spatial_math import principal_axes

    s = run.series
    p = np.asarray(s["moving_p_G"], float).reshape(-1, 3)
    q = np.asarray(s["moving_q_GB"], float).reshape(-1, 4)
    k = p.shape[0]
    moving = project.mass(run.parameters["moving_body"])
    _, R_BL = principal_axes(moving.inertia_L)
    R_mov = quat_to_matrix(q) @ R_BL
    t_mov = p - R_mov @ np.asarray(moving.com_L, float)
    names = [m.name for m in project.masses]
    R = np.zeros((k, len(names), 3, 3))
    t = np.zeros((k, len(names), 3))
    for j, m in enumerate(project.masses):
        if m.name == moving.name:
            R[:, j], t[:, j] = R_mov, t_mov
        else:
            R0, t0 = mass_pose(m)
            R[:, j], t[:, j] = R0, t0
    force = s.get("tissue_tension_N")
    labels = run.labels.get("tissue_tension_N") or []
    order = [a.name for a in project.attachments]
    if force is not None and sorted(labels) == sorted(order):
        force = np.asarray(force, float).reshape(k, -1)[:, [labels.index(n) for n in order]]
    else:
        force = None
    load = np.asarray(s.get("load", np.arange(k, dtype=float)), float).reshape(-1)[:k]
    unit = "N" if run.parameters.get("load_kind") != "internal_external" else "N·m"
    return RunFrames(times=load, names=names, R_GL=R, t_G=t, tissue_force_N=force, axis_name="load", axis_unit=unit)


def frame_from_sample(project: Project, sample: object) -> SceneFrame | None:
    """A live sample sent by a study's progress callback: a SceneFrame, a RunRecord-like dict of
    one-sample series (same names as above, without the sample axis), or None."""
    if isinstance(sample, SceneFrame):
        return sample
    if isinstance(sample, dict):
        ragged = ("tissue_paths_G", "contact_points_G", "contact_pressure_Pa", "labels", "time", "R_BL")
        series = {k: np.asarray(v)[None] for k, v in sample.items()
                  if k not in ragged and isinstance(v, (np.ndarray, list, tuple))}
        given = sample.get("labels")
        labels = {k: list(v) for k, v in given.items()} if isinstance(given, dict) else {}
        run = RunRecord(study="live", series=series, labels=labels,
                        parameters={"R_BL": sample["R_BL"]} if "R_BL" in sample else {})
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


__all__ = ["RunFrames", "frame_from_sample", "frames_from_run", "poses_from_arrays"]
