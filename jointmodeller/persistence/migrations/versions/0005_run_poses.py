"""Typed run results: one pose encoding per run (BodyPoses) and a unit per series.

Revision ID: 0005_run_poses
Revises: 0004_moving_points

Schema: runs.bodies (JSON list of the posed bodies' names, "[]" = no poses) and run_series.unit
("" = the default unit of the series' name, model.results.unit_of).

Data: the six pose encodings of older runs (body_p_G, body_q_GB, body_R_GB, mesh_R_GL, mesh_origin_G,
body_euler_deg) become the rows pose:p_G (k, n, 3), pose:q_GB (k, n, 4), pose:R_BL (n, 3, 3) and
pose:com_L (n, 3):

- p_G = body_p_G, exactly; q_GB = body_q_GB normalised, else the quaternion of body_R_GB;
- R_BL and com_L (each body frame B in its mesh frame L) from the first sample of the mesh frames
  the run stored with them: R_BL = R_GBᵀ R_GL, com_L = R_GLᵀ (p_G - origin_G), so the mesh is drawn
  where it was; a run without mesh frames (none was ever written so) takes B = L (R_BL = I,
  com_L = 0), as the old reader did;
- a run with only mesh frames (the GUI's scripted test motion) takes B = L: p_G = mesh_origin_G,
  q_GB the quaternion of mesh_R_GL;
- body_euler_deg and the other matrices are dropped (derived on demand now), with their labels;
- a laxity run's moving body (moving_p_G (k, 3), moving_q_GB (k, 4), parameters.moving_body) becomes
  the poses of that one body, its frame B from its row in the masses table as app.build makes it
  (com_L, principal axes of inertia_L); when that row is gone the run keeps the two series and has no
  poses (it is not replayed in 3D).

A run whose old arrays are damaged or disagree (shapes, non-finite values, not rotations) is left as
it was: reading it then names the run and the series. Arrays are decoded from their raw bytes with
the dtype allow-list; nothing is unpickled. Downgrade is not offered (the derived encodings would
have to be written back): keep a copy of a file before opening it with a newer JointModeller.
"""
import json

import numpy as np
import sqlalchemy as sa
from alembic import op

from jointmodeller.core.spatial_math import matrix_to_quat, principal_axes, quat_to_matrix

revision = "0005_run_poses"
down_revision = "0004_moving_points"
branch_labels = None
depends_on = None

DTYPES = {"float64": "<f8", "float32": "<f4", "int64": "<i8", "int32": "<i4", "bool": "|b1"}
OLD_POSES = ("body_p_G", "body_q_GB", "body_R_GB", "mesh_R_GL", "mesh_origin_G", "body_euler_deg")
LAXITY_POSES = ("moving_p_G", "moving_q_GB")
ROTATION_TOL = 1e-6


def _array(dtype: str, shape_json: str, data: bytes) -> np.ndarray:
    shape = json.loads(shape_json)
    if dtype not in DTYPES or not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("bad dtype or shape")
    return np.frombuffer(data, dtype=DTYPES[dtype]).reshape(shape).astype(np.float64)


def _blob(a: np.ndarray) -> tuple[str, str, bytes]:
    a = np.ascontiguousarray(a, dtype="<f8")
    return "float64", json.dumps(list(a.shape)), a.tobytes()


def _is_rotation(R: np.ndarray) -> bool:
    if R.size == 0:
        return True
    return bool(np.all(np.isfinite(R)) and np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max() <= ROTATION_TOL
                and np.abs(np.linalg.det(R) - 1.0).max() <= ROTATION_TOL)


def _poses(old: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The new pose rows of a run's old pose arrays, or None when they do not make a pose."""
    p, q, R_GB = old.get("body_p_G"), old.get("body_q_GB"), old.get("body_R_GB")
    R_GL, origin = old.get("mesh_R_GL"), old.get("mesh_origin_G")
    if p is not None and (q is not None or R_GB is not None):
        if p.ndim != 3 or p.shape[2] != 3 or p.shape[0] < 1:
            return None
        k, n = p.shape[:2]
        if q is not None:
            if q.shape != (k, n, 4) or not np.all(np.isfinite(q)) or np.any(np.linalg.norm(q, axis=-1) == 0):
                return None
            q = q / np.linalg.norm(q, axis=-1, keepdims=True)
            R_GB = quat_to_matrix(q)
        elif R_GB is not None and R_GB.shape == (k, n, 3, 3) and _is_rotation(R_GB):
            q = matrix_to_quat(R_GB)
        else:
            return None
        R_BL, com_L = np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3))
        if R_GL is not None and origin is not None:
            if R_GL.shape != (k, n, 3, 3) or origin.shape != (k, n, 3) or not _is_rotation(R_GL[0]):
                return None
            R_BL = np.swapaxes(R_GB[0], -1, -2) @ R_GL[0]
            com_L = np.einsum("nji,nj->ni", R_GL[0], p[0] - origin[0])
    elif R_GL is not None and origin is not None:  # mesh frames only: B = L
        if R_GL.ndim != 4 or R_GL.shape[2:] != (3, 3) or origin.shape != R_GL.shape[:2] + (3,) or R_GL.shape[0] < 1:
            return None
        if not _is_rotation(R_GL):
            return None
        n = R_GL.shape[1]
        p, q = origin, matrix_to_quat(R_GL)
        R_BL, com_L = np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3))
    else:
        return None
    out = {"p_G": p, "q_GB": q, "R_BL": R_BL, "com_L": com_L}
    if not all(np.all(np.isfinite(a)) for a in out.values()) or not _is_rotation(R_BL):
        return None
    return out


def _laxity_poses(old: dict[str, np.ndarray], frame: tuple[list, list] | None) -> dict[str, np.ndarray] | None:
    """The pose rows of a laxity run's moving body, with its (com_L, inertia_L) row, or None."""
    p, q = old.get("moving_p_G"), old.get("moving_q_GB")
    if frame is None or p is None or q is None or p.ndim != 2 or p.shape[1] != 3 or q.shape != (p.shape[0], 4):
        return None
    try:
        com_L = np.array(frame[0], float).reshape(1, 3)
        _, R_BL = principal_axes(np.array(frame[1], float).reshape(3, 3))
    except (TypeError, ValueError):
        return None
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q)) and np.all(norm > 0) and np.all(np.isfinite(com_L))
            and _is_rotation(R_BL)):
        return None
    return {"p_G": p[:, None], "q_GB": (q / norm)[:, None], "R_BL": R_BL[None], "com_L": com_L}


def _mass_frames(conn) -> dict[str, tuple[list, list]]:
    """(com_L, inertia_L) of every mass row, by name (rows that do not parse are left out)."""
    out = {}
    for name, com, inertia in conn.execute(sa.text("SELECT name, com_L, inertia_L FROM masses")).all():
        try:
            out[name] = (json.loads(com), json.loads(inertia))
        except (ValueError, TypeError, RecursionError):
            continue
    return out


def upgrade() -> None:
    op.add_column("runs", sa.Column("bodies", sa.Text, nullable=False, server_default="[]"))
    op.add_column("run_series", sa.Column("unit", sa.Text, nullable=False, server_default=""))
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("labels", sa.Text), sa.column("parameters", sa.Text),
                    sa.column("bodies", sa.Text))
    series = sa.table("run_series", sa.column("id", sa.Integer), sa.column("run_id", sa.Integer),
                      sa.column("name", sa.Text), sa.column("dtype", sa.String), sa.column("shape", sa.Text),
                      sa.column("data", sa.LargeBinary), sa.column("unit", sa.Text))
    masses = _mass_frames(conn)
    query = sa.select(runs.c.id, runs.c.labels, runs.c.parameters)
    for run_id, labels_json, parameters_json in conn.execute(query).all():
        rows = conn.execute(sa.select(series.c.id, series.c.name, series.c.dtype, series.c.shape, series.c.data)
                            .where(series.c.run_id == run_id, series.c.name.in_(OLD_POSES + LAXITY_POSES))).all()
        if not rows:
            continue
        try:
            labels, parameters = json.loads(labels_json), json.loads(parameters_json)
            old = {name: _array(dtype, shape, data) for _, name, dtype, shape, data in rows}
        except (ValueError, TypeError, RecursionError):
            continue  # damaged: left as it was, reported when read
        if not isinstance(labels, dict) or not isinstance(parameters, dict):
            continue
        try:
            converted = _convert(old, labels, parameters, masses)
        except (ValueError, TypeError):  # numbers that make no pose (scipy refuses them): left as it was
            converted = None
        if converted is None:
            continue
        new, bodies, consumed = converted
        conn.execute(sa.delete(series).where(series.c.id.in_([r[0] for r in rows if r[1] in consumed])))
        for name, a in new.items():
            dtype, shape, data = _blob(a)
            conn.execute(sa.insert(series).values(run_id=run_id, name="pose:" + name, dtype=dtype, shape=shape,
                                                  data=data, unit="1" if name in ("q_GB", "R_BL") else "m"))
        kept = {k: v for k, v in labels.items() if k not in consumed}
        conn.execute(sa.update(runs).where(runs.c.id == run_id)
                     .values(bodies=json.dumps(bodies), labels=json.dumps(kept, sort_keys=True)))


def _convert(old: dict[str, np.ndarray], labels: dict, parameters: dict, masses: dict[str, tuple[list, list]]
             ) -> tuple[dict[str, np.ndarray], list[str], tuple[str, ...]] | None:
    """(pose rows, body names, the old series they replace) of one run, or None to leave it as it is."""
    if set(old) <= set(LAXITY_POSES):
        moving = parameters.get("moving_body")
        new = _laxity_poses(old, masses.get(moving) if isinstance(moving, str) else None)
        return None if new is None else (new, [str(moving)], LAXITY_POSES)
    new = _poses(old)
    if new is None:
        return None
    n = new["p_G"].shape[1]
    bodies = next((list(labels[key]) for key in OLD_POSES if isinstance(labels.get(key), list)
                   and len(labels[key]) == n and all(isinstance(b, str) for b in labels[key])
                   and len(set(labels[key])) == n), [f"body {i + 1}" for i in range(n)])
    return new, bodies, OLD_POSES


def downgrade() -> None:
    raise NotImplementedError("0005_run_poses cannot be undone: the derived pose encodings are no longer stored")
