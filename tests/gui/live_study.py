"""A scripted study for GUI tests: the second mass turns about z while the study does numerical work
between samples, reporting progress and live samples like a real dynamics run."""

from __future__ import annotations

import time

import numpy as np

from jointmodeller.core.mechanics.rotations import matrix_to_quat
from jointmodeller.app.picking import mass_pose
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project


def turning_study(project: Project, steps: int = 120, work_s: float = 0.004, angle_rad: float = 0.8):
    """fn(progress, cancel) -> RunRecord; each step burns ``work_s`` of CPU in numpy (holding the GIL
    in short pieces as solver code does) and reports a sample with the poses of every mass."""
    names = [m.name for m in project.masses]
    poses = [mass_pose(m) for m in project.masses]
    m_att = len(project.attachments)

    def fn(progress, cancel):
        times, ps, qs, fs = [], [], [], []
        status = "completed"
        for k in range(steps + 1):
            if cancel.is_set():
                status = "stopped"
                break
            t0 = time.perf_counter()
            a = np.random.default_rng(k).normal(size=2000)
            while time.perf_counter() - t0 < work_s:  # small element-wise kernels, as a force evaluation
                a = np.sin(a) * 1.0001 + np.cos(a) * 1e-3
            t = k / steps
            th = angle_rad * t
            Rz = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])
            R = np.stack([p[0] if i == 0 else Rz @ p[0] for i, p in enumerate(poses)])
            com = np.array([m.com_L for m in project.masses])
            p_G = np.stack([poses[i][0] @ com[i] + poses[i][1] for i in range(len(poses))])
            q = matrix_to_quat(R)
            f = np.full(m_att, 40.0 * t)
            times.append(t)
            ps.append(p_G)
            qs.append(q)
            fs.append(f)
            progress(t, {"time": t, "body_p_G": p_G, "body_q_GL": q, "tissue_force_N": f,
                         "labels": {"body": names}})
        return RunRecord(study="dynamics", status=status,
                         series={"time": np.array(times), "body_p_G": np.array(ps), "body_q_GL": np.array(qs),
                                 "tissue_force_N": np.array(fs).reshape(len(times), m_att)},
                         labels={"body": names, "tissue_force_N": [a.name for a in project.attachments]})

    return fn
