"""The articular sheet of a cartilage layer (core.geometry.articular) and why contact needs it."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.articular import articular_face_mask, articular_surface, face_normals, submesh


def cap_layer(r_bone: float, thickness: float, cap_deg: float = 60.0):
    """A closed cartilage cap on a spherical bone: the shell between r_bone − 0.3 mm (embedded) and
    r_bone + thickness, cut to the polar cap of half-angle cap_deg (so it has side walls); contoured
    from its implicit function like the demo meshes."""
    from jointmodeller.io.mesh_demo import contour

    lo, hi = r_bone - 0.0003, r_bone + thickness

    def sdf(P):
        rho = np.linalg.norm(P, axis=1)
        layer = np.abs(rho - 0.5 * (lo + hi)) - 0.5 * (hi - lo)
        polar = np.arccos(np.clip(P[:, 2] / np.maximum(rho, 1e-12), -1, 1)) - np.radians(cap_deg)
        return np.maximum(layer, polar * rho)

    e = hi + 0.002
    v, f = contour(sdf, ((-e, e), (-e, e), (-e, e)), 0.0003)
    return trimesh.Trimesh(v, f, process=False)


def hi_mid(r, h):
    return r + 0.5 * h


def test_sphere_cap_keeps_exactly_the_outer_surface():
    r, h = 0.02, 0.002
    cap = cap_layer(r, h)
    assert cap.is_watertight
    bone = trimesh.creation.icosphere(5, radius=r)
    v, f = np.asarray(cap.vertices), np.asarray(cap.faces)
    mask = articular_face_mask(v, f, np.asarray(bone.vertices), np.asarray(bone.faces))
    radius = np.linalg.norm(v[f].mean(axis=1), axis=1)
    n = face_normals(v, f)
    radial = (n * (v[f].mean(axis=1) / radius[:, None])).sum(axis=1)
    outer = (radial > 0.9) & (radius > hi_mid(r, h))  # the outer sphere's faces
    inner = (radial < -0.9) & (radius < r)  # the bone side
    walls = np.abs(radial) < 0.4  # (marching-cubes bevels at the rim lie between)
    assert outer.sum() > 100 and inner.sum() > 100 and walls.sum() > 10
    assert mask[outer].all()
    assert not mask[inner].any()
    assert not mask[walls].any()
    # the sheet: one open surface whose every vertex sits on the outer sphere
    vs, fs = articular_surface(v, f, np.asarray(bone.vertices), np.asarray(bone.faces))
    assert np.allclose(np.linalg.norm(vs, axis=1), r + h, rtol=0.02)
    area = trimesh.Trimesh(vs, fs, process=False).area
    cap_area = 2 * np.pi * (r + h) ** 2 * (1 - np.cos(np.radians(60.0)))
    assert area == pytest.approx(cap_area, rel=0.03)


def test_an_open_sheet_or_a_missing_bone_keeps_the_mesh():
    sheet = trimesh.creation.icosphere(3, radius=0.021)
    keep = sheet.vertices[:, 2] > 0.005
    v, f = submesh(np.asarray(sheet.vertices), np.asarray(sheet.faces), keep[sheet.faces].all(axis=1))
    bone = trimesh.creation.icosphere(4, radius=0.02)
    vs, fs = articular_surface(v, f, np.asarray(bone.vertices), np.asarray(bone.faces))
    assert len(fs) == len(f) and np.array_equal(vs, v)
    vs, fs = articular_surface(v, f, None, None)
    assert vs is v and fs is f


def test_submesh_renumbers_and_keeps_geometry():
    box = trimesh.creation.box()
    v, f = np.asarray(box.vertices), np.asarray(box.faces)
    mask = np.zeros(len(f), bool)
    mask[[0, 1]] = True
    vs, fs = submesh(v, f, mask)
    assert fs.max() == len(vs) - 1
    assert np.allclose(vs[fs], v[f[mask]])


@pytest.mark.slow
def test_demo_contact_force_grows_as_the_ulna_is_pushed_deeper():
    """Pushing the ulna into the humerus 0.4 → 2 mm (of 3 mm of cartilage): the contact force grows at
    every step. With the closed cartilage shells it did not (measured 11.9 kN at 1.2 mm, 7.9 kN at 2 mm):
    past the middle of a layer, vertices measured their depth from the bone side or a side wall."""
    from jointmodeller.app import build, demo
    from jointmodeller.core.mechanics.contact import ContactPair
    from jointmodeller.core.mechanics.forces import BodyKinematics

    built = build.build_mechanical_system(demo.build_demo_project())
    pair = next(e for e in built.system.extra_elements if isinstance(e, ContactPair))
    kin0 = built.system.kinematics(built.state.y)
    u = np.array([0.3, 0.5, 1.0]) / np.linalg.norm([0.3, 0.5, 1.0])  # proximal, a little anterolateral
    force = []
    for s in (0.4e-3, 0.8e-3, 1.2e-3, 1.6e-3, 2.0e-3):
        p = kin0.p_G.copy()
        p[pair.b] = p[pair.b] + s * u
        kin = BodyKinematics(p, kin0.R_GB, np.zeros_like(p), np.zeros_like(p))
        force.append(np.linalg.norm(pair.evaluate(0.0, kin).total_force_G))
    assert force[0] > 100.0  # the push really loads the cartilage
    assert np.all(np.diff(force) > 0), force
