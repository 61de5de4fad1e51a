"""Procedural closed meshes with known geodesics, for checks and benchmarks (no licensed data).

``grid_cylinder`` keeps triangles near-equilateral everywhere (lateral grid plus ring-meshed caps),
which a fan-capped ``trimesh.creation.cylinder`` does not.
"""

from __future__ import annotations

import numpy as np
import trimesh


def grid_cylinder(radius: float, height: float, n_theta: int = 256, n_z: int = 190) -> trimesh.Trimesh:
    """Closed cylinder about z, centred at the origin: n_theta × n_z lateral grid plus ring caps.

    About n_theta·(n_z + 2·n_theta/(2π)) vertices; 256 × 190 gives ~50k.
    """
    th = np.linspace(0.0, 2 * np.pi, n_theta, endpoint=False)
    z = np.linspace(-height / 2, height / 2, n_z)
    T, Z = np.meshgrid(th, z)
    verts = [np.stack([radius * np.cos(T).ravel(), radius * np.sin(T).ravel(), Z.ravel()], axis=1)]
    faces = []
    i = np.arange(n_z - 1)[:, None]
    j = np.arange(n_theta)[None, :]
    v00 = i * n_theta + j
    v01 = i * n_theta + (j + 1) % n_theta
    v10 = (i + 1) * n_theta + j
    v11 = (i + 1) * n_theta + (j + 1) % n_theta
    faces.append(np.stack([v00, v01, v11], -1).reshape(-1, 3))
    faces.append(np.stack([v00, v11, v10], -1).reshape(-1, 3))
    base = n_theta * n_z
    cap_rings = max(int(n_theta / (2 * np.pi)), 1)
    for top in (False, True):
        zc = height / 2 if top else -height / 2
        ring0 = (n_z - 1) * n_theta if top else 0  # outer lateral ring
        rings = [ring0 + np.arange(n_theta)]
        # inner rings with decreasing counts, then a centre vertex
        for r in range(1, cap_rings):
            rad = radius * (1.0 - r / cap_rings)
            cnt = max(int(round(n_theta * (1.0 - r / cap_rings))), 6)
            ang = np.linspace(0.0, 2 * np.pi, cnt, endpoint=False) + (r % 2) * np.pi / cnt
            pts = np.stack([rad * np.cos(ang), rad * np.sin(ang), np.full(cnt, zc)], axis=1)
            verts.append(pts)
            rings.append(base + np.arange(cnt))
            base += cnt
        verts.append(np.array([[0.0, 0.0, zc]]))
        centre = base
        base += 1
        all_v = np.concatenate(verts)
        for outer, inner in zip(rings[:-1], rings[1:]):
            faces.append(_stitch(outer, inner, all_v))
        last = rings[-1]
        faces.append(np.stack([last, np.roll(last, -1), np.full(len(last), centre)], axis=1))
    V = np.concatenate(verts)
    F = np.concatenate(faces)
    # the solid is convex and centred at the origin: orient every face away from the centre
    nrm = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    flip = np.einsum("ij,ij->i", nrm, V[F].mean(axis=1)) < 0
    F[flip] = F[flip][:, ::-1]
    return trimesh.Trimesh(V, F, process=True)


def _stitch(outer: np.ndarray, inner: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Triangulate the band between two closed rings by merging their angular orders."""
    ao = np.mod(np.arctan2(V[outer, 1], V[outer, 0]), 2 * np.pi)
    ai = np.mod(np.arctan2(V[inner, 1], V[inner, 0]), 2 * np.pi)
    oo = outer[np.argsort(ao)]
    ii = inner[np.argsort(ai)]
    ao, ai = np.sort(ao), np.sort(ai)
    tris = []
    a, b = 0, 0
    no, ni = len(oo), len(ii)
    while a < no or b < ni:
        na = ao[a + 1] if a + 1 < no else ao[0] + 2 * np.pi
        nb = ai[b + 1] if b + 1 < ni else ai[0] + 2 * np.pi
        if (na <= nb and a < no) or b >= ni:
            tris.append([oo[a % no], oo[(a + 1) % no], ii[b % ni]])
            a += 1
        else:
            tris.append([oo[a % no], ii[(b + 1) % ni], ii[b % ni]])
            b += 1
    return np.asarray(tris, np.int64)


def sphere(radius: float, subdivisions: int = 6) -> trimesh.Trimesh:
    """Icosphere (subdivisions 6: 40,962 vertices)."""
    return trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
