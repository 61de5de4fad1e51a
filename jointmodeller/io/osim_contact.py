"""OpenSim JAM cartilage contact (Smith 2018) into a project: cartilage layers and contact pairs.

``import_contact(reader, masses)`` is called by ``io.osim`` once the bodies are read:

- each ``Smith2018ContactMesh`` of the ContactGeometrySet becomes its body's ``Mass.cartilage`` (the
  mesh in the body's L frame: socket frame, location, orientation and scale factors applied), kept
  apart from the bone: a model that also draws the cartilage file as attached geometry of the body
  (JAM's models do) had it merged into the bone mesh by ``io.osim``; that block is taken out again.
- each ``Smith2018ArticularContactForce`` of the ForceSet becomes an elastic-foundation
  ``ContactPair``: body_a carries the casting mesh (the spring bed, where JAM computes pressure),
  body_b the target mesh. JAM's lumped model (Bei & Fregly 2004) combines the two layers: the pair's
  thickness is the sum of the meshes' thicknesses, E and ν their means.

A contact mesh whose file is missing is reported and left out; the pairs on it are still imported
(the body's bone surface stands in for the cartilage until one is made, e.g. with
``jointmodeller cartilage``). What the project cannot hold (variable thickness, the non-linear
formulation, proximity limits) is listed as approximated.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from jointmodeller.core.spatial_math import euler_to_matrix
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import ContactPair, Mass, Project
from jointmodeller.model.validation import project_problems

__all__ = ["import_contact", "ContactMeshInfo", "CONTACT_MESH_TAG", "CONTACT_FORCE_TAG"]

CONTACT_MESH_TAG = "Smith2018ContactMesh"
CONTACT_FORCE_TAG = "Smith2018ArticularContactForce"
EULER = "XYZ"  # OpenSim's body-fixed X-Y-Z orientation, radians
NO_FILE = ("", "unassigned")
JAM_DEFAULTS = {"elastic_modulus": 10.0e6, "poissons_ratio": 0.45, "thickness": 0.005}
"""Smith2018ContactMesh property defaults (OpenSim JAM) for a file that leaves them out."""


@dataclass(frozen=True)
class ContactMeshInfo:
    """One Smith2018ContactMesh as read: body, file, material and its mesh in L (None: not read)."""

    name: str
    body: str
    mesh_file: str
    youngs_modulus_Pa: float
    poisson_ratio: float
    thickness_m: float
    mesh: MeshData | None


def _socket(doc, el: ET.Element, name: str) -> str:
    """A socket's target: OpenSim 4 <socket_NAME>, else the older plain <NAME> ("" if none)."""
    return doc.text(el, f"socket_{name}") or doc.text(el, name) or ""


def _transform(md: MeshData, scale: np.ndarray, R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Mesh vertices scaled, then rotated and moved into the body frame (io.osim's arithmetic)."""
    return (np.asarray(md.vertices_L) * scale) @ R.T + p


def _same_file(a: str, b: str) -> bool:
    return Path(a.replace("\\", "/")).name.lower() == Path(b.replace("\\", "/")).name.lower()


def _remove_block(mesh: MeshData, block: np.ndarray) -> MeshData | None | bool:
    """``mesh`` without the contiguous vertex block equal to ``block`` (and the faces on it); False
    when no such block is found, None when nothing would be left."""
    v = np.asarray(mesh.vertices_L)
    n = len(block)
    if n == 0 or n > len(v):
        return False
    starts = np.flatnonzero(np.all(v[: len(v) - n + 1] == block[0], axis=1))
    for s in starts:
        if not np.array_equal(v[s:s + n], block):
            continue
        f = np.asarray(mesh.faces)
        inside = (f >= s) & (f < s + n)
        if (inside.any(axis=1) & ~inside.all(axis=1)).any():
            continue  # faces that straddle the block: not a merged part
        keep_f = ~inside.any(axis=1)
        if not keep_f.any():
            return None
        f = f[keep_f]
        f = np.where(f >= s + n, f - n, f)
        vv = np.concatenate([v[:s], v[s + n:]])
        return MeshData(vv, f, source=mesh.source, warnings=mesh.warnings)
    return False


def _read_contact_meshes(reader, masses: dict[str, Mass]) -> dict[str, ContactMeshInfo]:
    from jointmodeller.io.osim import OsimError, find_mesh_file

    doc, rep = reader.doc, reader.report
    out: dict[str, ContactMeshInfo] = {}
    for el in reader.objects("ContactGeometrySet"):
        name = el.get("name", "?")
        if el.tag != CONTACT_MESH_TAG:
            rep.skip(name, el.tag, "only Smith2018ContactMesh contact geometry is imported (cartilage contact "
                                   "is defined on meshes)")
            continue
        try:
            frame = reader.frames.resolve(_socket(doc, el, "frame") or "")
            loc = np.asarray(doc.floats(el, "location", 3, (0.0, 0.0, 0.0)))
            R_loc = euler_to_matrix(np.asarray(doc.floats(el, "orientation", 3, (0.0, 0.0, 0.0))), EULER)
            scale = np.asarray(doc.floats(el, "scale_factors", 3, (1.0, 1.0, 1.0)))
            E = doc.float(el, "elastic_modulus", JAM_DEFAULTS["elastic_modulus"])
            nu = doc.float(el, "poissons_ratio", JAM_DEFAULTS["poissons_ratio"])
            h = doc.float(el, "thickness", JAM_DEFAULTS["thickness"])
        except OsimError as exc:
            rep.skip(name, el.tag, str(exc))
            continue
        body = frame.body
        if body not in masses:
            rep.skip(name, el.tag, f"attached to {body!r}, which is not an imported body")
            continue
        R, p = frame.R @ R_loc, frame.p + frame.R @ loc
        fname = doc.text(el, "mesh_file") or ""
        if doc.bool(el, "use_variable_thickness"):
            rep.approx(name, el.tag, f"variable thickness (from {doc.text(el, 'mesh_back_file') or '?'}) is not "
                                     f"kept: the constant thickness {h * 1e3:g} mm is used")
        mesh = None
        if reader.load_meshes:
            mesh = _read_one(reader, name, el.tag, fname, scale, R, p, find_mesh_file)
        out[name] = ContactMeshInfo(name, body, fname, E, nu, h, mesh)
    return out


def _read_one(reader, name, tag, fname, scale, R, p, find_mesh_file) -> MeshData | None:
    rep = reader.report
    if fname.strip().lower() in NO_FILE:
        rep.skip(name, tag, "no mesh file given; contact on this body uses its bone mesh")
        return None
    found = find_mesh_file(fname, reader.path.parent, reader.search)
    if found is None:
        rep.skip(name, tag, f"mesh file {fname!r} not found beside the model, in Geometry/ or on the search "
                            "paths; contact on this body uses its bone mesh (make a cartilage layer with "
                            "`jointmodeller cartilage`)")
        return None
    try:
        md = reader.read_mesh(found, "m")
    except Exception as exc:  # noqa: BLE001 — any reader failure is reported, not raised
        rep.skip(name, tag, f"cannot read {found.name}: {exc}; contact on this body uses its bone mesh")
        return None
    return MeshData(_transform(md, scale, R, p), md.faces, source=found.name,
                    warnings=tuple(f"{found.name}: {w}" for w in md.warnings))


def _split_from_bone(reader, body_el: ET.Element | None, mass: Mass, cart_files: list[str]) -> Mass:
    """The mass with the attached-geometry copies of its cartilage files taken out of its bone mesh."""
    if body_el is None or mass.mesh is None:
        return mass
    from jointmodeller.io.osim import find_mesh_file

    bone = mass.mesh
    for comp, fname, scale, fr in reader.geometry_entries(body_el, mass.name):
        if not any(_same_file(fname, c) for c in cart_files):
            continue
        found = find_mesh_file(fname, reader.path.parent, reader.search)
        if found is None:
            continue  # not read, so not merged (io.osim reported it)
        try:
            md = reader.read_mesh(found, "m")
        except Exception:  # noqa: BLE001 — io.osim already reported it
            continue
        rest = _remove_block(bone, np.ascontiguousarray(_transform(md, scale, fr.R, fr.p), dtype=np.float64))
        if rest is False:
            reader.report.approx(comp, "Mesh", "cartilage file drawn on the body could not be told apart from "
                                               "its bone mesh; it stays in the bone mesh")
            continue
        used = [s for s in bone.source.split("+") if s != found.name] if bone.source else []
        warns = tuple(w for w in bone.warnings if not w.startswith(f"{found.name}: "))
        bone = None if rest is None else MeshData(rest.vertices_L, rest.faces, source="+".join(used), warnings=warns)
        reader.report.approx(comp, "Mesh", "cartilage mesh kept as the body's cartilage layer, apart from the bone")
        if bone is None:
            break
    return replace(mass, mesh=bone)


def _pair(reader, el: ET.Element, meshes: dict[str, ContactMeshInfo], masses: dict[str, Mass]) -> ContactPair | None:
    doc, rep = reader.doc, reader.report
    name = el.get("name", "?")
    if not doc.bool(el, "appliesForce", True):
        rep.skip(name, el.tag, "appliesForce is false")
        return None
    ends = []
    for socket in ("casting_mesh", "target_mesh"):
        path = _socket(doc, el, socket)
        key = path.rstrip("/").split("/")[-1]
        if key not in meshes:
            rep.skip(name, el.tag, f"its {socket} {path!r} is not an imported Smith2018ContactMesh")
            return None
        ends.append(meshes[key])
    cast, target = ends
    if cast.body == target.body:
        rep.skip(name, el.tag, f"both meshes lie on {cast.body!r}")
        return None
    for m in ends:
        mass = masses[m.body]
        if reader.load_meshes and m.mesh is None and mass.mesh is None:
            rep.skip(name, el.tag, f"{m.body!r} has neither its cartilage mesh ({m.mesh_file}) nor a bone mesh")
            return None
        if reader.load_meshes and m.mesh is None:
            rep.approx(name, el.tag, f"{m.name}'s mesh is missing: {m.body}'s bone surface stands in for it "
                                     "(make a cartilage layer with `jointmodeller cartilage`)")
    if not doc.bool(el, "use_lumped_contact_model", True):
        rep.approx(name, el.tag, "per-mesh material (use_lumped_contact_model false) imported as the lumped model")
    formulation = (doc.text(el, "elastic_foundation_formulation") or "linear").lower()
    if formulation != "linear":
        rep.approx(name, el.tag, f"{formulation} depth-pressure formulation imported as linear")
    try:
        lo = doc.float(el, "min_proximity", 0.0)
        hi = doc.float(el, "max_proximity", 0.01)
    except Exception:  # noqa: BLE001 — search limits only; the pair does not need them
        lo, hi = 0.0, 0.01
    rep.approx(name, el.tag, f"elastic foundation, lumped: thickness {cast.thickness_m * 1e3:g} + "
                             f"{target.thickness_m * 1e3:g} mm, E and ν the layers' means; proximity limits "
                             f"[{lo * 1e3:g}, {hi * 1e3:g}] mm not kept (the contact search is the project's)")
    return ContactPair(
        name=name, body_a=cast.body, body_b=target.body, method="elastic_foundation",
        cartilage_thickness_m=float(cast.thickness_m + target.thickness_m),
        youngs_modulus_Pa=float(0.5 * (cast.youngs_modulus_Pa + target.youngs_modulus_Pa)),
        poisson_ratio=float(0.5 * (cast.poisson_ratio + target.poisson_ratio)),
    )


def _valid(pair: ContactPair, masses: dict[str, Mass]) -> str:
    """The first validation problem of the pair on its own ("" when none)."""
    bare = [replace(masses[b], mesh=None, cartilage=None, joint=None) for b in (pair.body_a, pair.body_b)]
    probs = [p for p in project_problems(Project(masses=tuple(bare), contacts=(pair,))) if p.section == "Contacts"]
    return f"{probs[0].field}: {probs[0].message}" if probs else ""


def import_contact(reader, masses: list[Mass]) -> tuple[list[Mass], list[ContactPair]]:
    """(masses with their cartilage layers, contact pairs) of the model read by ``reader`` (an
    ``io.osim._Reader``: doc, frames, objects(), geometry_entries(), read_mesh, report)."""
    by_name = {m.name: m for m in masses}
    meshes = _read_contact_meshes(reader, by_name)
    body_els = {el.get("name", "?"): el for el in reader.objects("BodySet")}
    files: dict[str, list[str]] = {}
    layers: dict[str, list[MeshData]] = {}
    for info in meshes.values():
        files.setdefault(info.body, []).append(info.mesh_file)
        if info.mesh is not None:
            layers.setdefault(info.body, []).append(info.mesh)
    out = []
    for m in masses:
        if m.name in files:
            m = _split_from_bone(reader, body_els.get(m.name), m, files[m.name])
        if m.name in layers:
            m = replace(m, cartilage=_merged(layers[m.name]))
            reader.count("cartilage layers")
        out.append(m)
    by_name = {m.name: m for m in out}
    pairs = []
    for el in reader.objects("ForceSet"):
        if el.tag != CONTACT_FORCE_TAG:
            continue
        pair = _pair(reader, el, meshes, by_name)
        if pair is None:
            continue
        why = _valid(pair, by_name)
        if why:
            reader.report.skip(pair.name, el.tag, f"invalid after import ({why}); left out")
            continue
        pairs.append(pair)
        reader.count("contact pairs")
    done = {p.name for p in pairs}  # io.osim's force reader listed them as "not a tissue"
    reader.report.not_imported[:] = [i for i in reader.report.not_imported
                                     if not (i.type == CONTACT_FORCE_TAG and i.component in done)]
    return out, pairs


def _merged(parts: list[MeshData]) -> MeshData:
    if len(parts) == 1:
        return parts[0]
    verts, faces, off = [], [], 0
    for md in parts:
        verts.append(md.vertices_L)
        faces.append(np.asarray(md.faces) + off)
        off += md.n_vertices
    return MeshData(np.concatenate(verts), np.concatenate(faces), source="+".join(p.source for p in parts),
                    warnings=tuple(w for p in parts for w in p.warnings))
