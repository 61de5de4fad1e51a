"""Prototypes of the "field" contact geometry measured against the exact one on the demo elbow's dynamics
(issue 17; docs/sdf.md, "Closing the field's gap to the exact geometry").

Not part of the package: each variant wraps ``core.mechanics.contact.field_springs`` in numpy, with
per-node answers cached in a Python dict, so it is slow (minutes for 0.3 s) and only its trajectory counts.

Variants (``--variant``):

- ``field``: the field geometry as built (depth = the field's distance, push along its smooth gradient);
- ``normal``: the depth and push along the smooth normal at the closest point (the exact geometry's
  definition), the normal sampled exactly at the cell's eight lattice nodes and interpolated trilinearly;
- ``normal-at-point``: the same normal taken exactly at each vertex's own closest point (the limit of a
  finer normal field);
- ``face-field``: the field only chooses each spring's candidate faces (the closest faces of its cell's
  eight lattice nodes); the closest point, the smooth normal there and the depth along it are measured on
  those faces exactly, as the exact geometry measures them.

``--half`` builds the contact fields at half the default spacing. Every run is compared with an exact run
at ``--reference-digits`` (computed once and kept in ``--out``): largest position and quaternion
difference of the forearm over the first 0.1 s and over the whole run.

    .venv/bin/python scripts/experiments/field_depth_prototypes.py --variant face-field --t-end 0.3
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from jointmodeller.core.geometry.collision_proximity import _triangle_distance2
from jointmodeller.core.mechanics import contact

CORNERS = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)])


class NodeAnswers:
    """Exact closest-point answers (smooth normal, face) at lattice nodes, queried once per node."""

    def __init__(self) -> None:
        self.normal: dict = {}
        self.face: dict = {}

    def at(self, sdf, prox, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sid = id(sdf)
        missing = np.array([k for k in map(tuple, keys) if (sid, k) not in self.face]).reshape(-1, 3)
        if len(missing):
            cp = prox.closest(sdf.origin + sdf.spacing * missing, 3e-3)
            normal = np.full((len(missing), 3), np.nan)
            face = np.full(len(missing), -1)
            normal[cp.index], face[cp.index] = cp.normal, cp.face
            for k, n, f in zip(map(tuple, missing), normal, face):
                self.normal[(sid, k)], self.face[(sid, k)] = n, f
        normals = np.array([self.normal[(sid, k)] for k in map(tuple, keys)])
        faces = np.array([self.face[(sid, k)] for k in map(tuple, keys)])
        return normals, faces


def exact_on_faces(P: np.ndarray, faces8: np.ndarray, prox) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(closest point (m, 3), smooth unit normal (m, 3), depth along it (m,), NaN: no face) of each point
    P (m, 3) on the nearest of its candidate faces faces8 (m, 8) (−1: none), as the exact geometry
    measures it (Ericson's closest point, vertex normals interpolated with its barycentric coordinates)."""
    v, f, vn = prox.vertices, prox.faces, prox.vertex_normals
    s = np.zeros_like(P)
    n = np.zeros_like(P)
    depth = np.full(len(P), np.nan)
    for r in range(len(P)):
        best, pick = np.inf, None
        for face in set(int(x) for x in faces8[r] if x >= 0):
            a, b, c = v[f[face]]
            ok, u, vv, w, dd = _triangle_distance2(*P[r], *a, *(b - a), *(c - a))
            if ok and dd < best:
                best, pick = dd, (face, u, vv, w)
        if pick is None:
            continue
        face, u, vv, w = pick
        s[r] = u * v[f[face, 0]] + vv * v[f[face, 1]] + w * v[f[face, 2]]
        nr = u * vn[f[face, 0]] + vv * vn[f[face, 1]] + w * vn[f[face, 2]]
        n[r] = nr / np.linalg.norm(nr)
        depth[r] = float((s[r] - P[r]) @ n[r])
    return s, n, depth


def wrap_field_springs(variant: str, proxes: dict, answers: NodeAnswers):
    """A replacement of contact.field_springs implementing ``variant`` on top of the original."""
    original = contact.field_springs

    def springs(sdf, vertices_B, normals_B, cand, R_ob, p_ob, R_Go, p_Go, band, facing_zero, facing_full):
        idx, mid_G, normal_G, offset_G, depth = original(sdf, vertices_B, normals_B, cand, R_ob, p_ob, R_Go, p_Go,
                                                         band, facing_zero, facing_full)
        if not len(idx) or variant == "field":
            return idx, mid_G, normal_G, offset_G, depth
        prox = proxes[id(sdf)]
        P = vertices_B[idx] @ R_ob.T + p_ob
        rel = (P - sdf.origin) / sdf.spacing
        cell = np.floor(rel).astype(np.int64)
        keys = (cell[:, None, :] + CORNERS[None]).reshape(-1, 3)
        if variant == "face-field":
            _, faces = answers.at(sdf, prox, keys)
            s, n, d = exact_on_faces(P, faces.reshape(len(idx), 8), prox)
            keep = np.isfinite(d) & (d > -band)
            mid = (0.5 * (P + s)) @ R_Go.T + p_Go
            return idx[keep], mid[keep], (n @ R_Go.T)[keep], ((s - P) @ R_Go.T)[keep], np.maximum(d[keep], 0.0)
        if variant == "normal":
            normals, _ = answers.at(sdf, prox, keys)
            frac = rel - cell
            weight = np.prod(np.where(CORNERS[None] == 1, frac[:, None, :], 1.0 - frac[:, None, :]), axis=2)
            nodes = normals.reshape(len(idx), 8, 3)
            ok = ~np.isnan(nodes).any(axis=(1, 2))
            N = (weight[:, :, None] * np.nan_to_num(nodes)).sum(axis=1)
        else:  # normal-at-point
            cp = prox.closest(P, 3e-3)
            N = np.zeros_like(P)
            ok = np.zeros(len(idx), bool)
            N[cp.index], ok[cp.index] = cp.normal, True
        N_G = np.where(ok[:, None], N, 1.0) @ R_Go.T
        N_G /= np.linalg.norm(N_G, axis=1)[:, None]
        cos = (normal_G * N_G).sum(axis=1)
        return idx, mid_G, np.where(ok[:, None], N_G, normal_G), offset_G, np.where(ok, depth * cos, depth)

    return springs


def run(variant: str, half: bool, digits: int, t_end: float) -> tuple[np.ndarray, str]:
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.core.data import using
    from jointmodeller.core.multibody.integrate import report_times, simulate

    spacing = contact.contact_field_spacing
    if half:
        contact.contact_field_spacing = lambda v, f: 0.5 * spacing(v, f)
    geometry = "exact" if variant == "exact" else "field"
    built = build_mechanical_system(build_demo_project(), free_path_shortcut=True, contact_geometry=geometry)
    original = contact.field_springs
    if geometry == "field":
        pair = next(e for e in built.system.extra_elements if isinstance(e, contact.ContactPair))
        proxes = {id(s.sdf): s.proximity for s in (pair.surface_a, pair.surface_b) if s.sdf is not None}
        contact.field_springs = wrap_field_springs(variant, proxes, NodeAnswers())
    try:
        with using():
            start = time.perf_counter()
            traj = simulate(built.system, built.state, t_end, 10.0**-digits, report_times(0.0, t_end, 1e-3),
                            method="Radau")
            wall = time.perf_counter() - start
    finally:
        contact.field_springs, contact.contact_field_spacing = original, spacing
    return np.hstack([traj.q, traj.u]), f"{wall:.1f} s wall, {traj.n_rhs} evaluations"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("field", "normal", "normal-at-point", "face-field", "exact"),
                        default="face-field")
    parser.add_argument("--half", action="store_true", help="contact fields at half the default spacing")
    parser.add_argument("--digits", type=int, default=4)
    parser.add_argument("--reference-digits", type=int, default=6)
    parser.add_argument("--t-end", type=float, default=0.3)
    parser.add_argument("--out", type=Path, default=Path("test-artifacts/field-prototypes"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ref_file = args.out / f"exact-{args.reference_digits}-{args.t_end:g}.npy"
    if not ref_file.exists():
        ref, note = run("exact", False, args.reference_digits, args.t_end)
        np.save(ref_file, ref)
        print(f"reference: exact at {args.reference_digits} digits, {note}")
    ref = np.load(ref_file)
    y, note = run(args.variant, args.half, args.digits, args.t_end)
    pos = np.linalg.norm(y[:, 3:6] - ref[:, 3:6], axis=1)  # the forearm (body 1)
    quat = np.minimum(np.linalg.norm(y[:, 10:14] - ref[:, 10:14], axis=1),
                      np.linalg.norm(y[:, 10:14] + ref[:, 10:14], axis=1))
    first = ref[:, 0].size if args.t_end <= 0.1 else 101
    print(f"{args.variant}{' h/2' if args.half else ''} at {args.digits} digits ({note}): over 0.1 s "
          f"{1e6 * pos[:first].max():.1f} um, {quat[:first].max():.2e}; over {args.t_end:g} s "
          f"{1e6 * pos.max():.1f} um, {quat.max():.2e}")


if __name__ == "__main__":
    main()
