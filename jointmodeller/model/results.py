"""Results of a study run: its parameters, the poses of its bodies and named derived series, stored
beside the inputs.

The one pose encoding is :class:`BodyPoses`: per sample and body the origin p_G of the body frame B
(centre of mass, principal axes) and its unit quaternion q_GB (w, x, y, z, scalar first as in
core.spatial_math), with each body's B in its mesh frame L at the time of the run (R_BL, com_L).
Rotation matrices, the mesh frames a viewer draws and Euler angles are derived from it where they
are needed (``app.run_poses``), never stored. Everything else a run reports is a named series with
its unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

QUATERNION_NORM_TOL = 1e-6
"""|q_GB| of a stored pose may differ from 1 by this much (a normalised float64 quaternion is within
a few 1e-16; an integrator's state, normalised on every evaluation, within its own tolerance)."""
ROTATION_TOL = 1e-6
"""R_BL of a stored pose is orthonormal with determinant +1 to this much."""

POSE_FIELDS = ("p_G", "q_GB", "R_BL", "com_L")
"""The arrays of a :class:`BodyPoses`, stored as series ``pose:<field>`` (persistence.store)."""
LEGACY_POSE_SERIES = ("body_p_G", "body_q_GB", "body_R_GB", "mesh_R_GL", "mesh_origin_G", "body_euler_deg",
                      "body_T_GL", "body_q_GL")
"""Pose encodings runs held as series before schema 0005 (migration 0005_run_poses converts them):
no series may be named so; a run's poses are its BodyPoses."""

SERIES_UNITS: dict[str, str] = {
    "time": "s",
    "step": "1",
    "body_v_G": "m/s",
    "body_w_G": "rad/s",
    "tissue_length_m": "m",
    "tissue_strain": "1",
    "tissue_force_N": "N",
    "tissue_tension_N": "N",
    "kinetic_energy_J": "J",
    "contact_force_G": "N",
    "q": "m or rad",
    "u": "m/s or rad/s",
    "length_m": "m",
    "moment_arm_m": "m",
    "moment_arm_excursion_m": "m",
    "wrapped": "1",
    "extra_force_N": "N",
    "jcs": "rad or m",
    "moving_p_G": "m",
    "moving_q_GB": "1",
}
"""Units of the series the studies write (SI; "1": dimensionless; "m or rad": per coordinate).
A series not named here takes the unit its writer gives, else its name's suffix (:func:`unit_of`)."""

UNIT_SUFFIXES = (("_deg", "deg"), ("_rad", "rad"), ("_mm", "mm"), ("_Nm", "N·m"), ("_m", "m"), ("_N", "N"),
                 ("_J", "J"), ("_Pa", "Pa"), ("_s", "s"), ("_hz", "Hz"))


def unit_of(name: str) -> str:
    """The unit of a series called ``name``: SERIES_UNITS, else its suffix (``varus_valgus_deg`` ->
    "deg"), else "" (not known)."""
    if name in SERIES_UNITS:
        return SERIES_UNITS[name]
    for suffix, unit in UNIT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return unit
    return ""


class RunDataError(ValueError):
    """A run's data that breaks the schema; ``field`` names the pose field or series."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


def _float_array(value: Any, name: str, shape: tuple[int | None, ...]) -> np.ndarray:
    """``value`` as a float64 array of ``shape`` (None: any length), all finite, else RunDataError."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise RunDataError(name, "not an array of numbers") from None
    if a.ndim != len(shape) or any(want is not None and got != want for got, want in zip(a.shape, shape)):
        want = "(" + ", ".join("k" if i == 0 and n is None else ("n" if n is None else str(n))
                               for i, n in enumerate(shape)) + ")"
        raise RunDataError(name, f"shape {tuple(a.shape)}, expected {want}")
    if not np.all(np.isfinite(a)):
        raise RunDataError(name, "holds values that are not finite (NaN or infinity)")
    return a


@dataclass(frozen=True, eq=False)
class BodyPoses:
    """Where every body of a run is at every sample: the one pose encoding.

    bodies: body names (n,) — the project's masses, and "ground" when a tissue, load or contact uses it.
    p_G (k, n, 3) [m]: origin of each body frame B (its centre of mass) in G.
    q_GB (k, n, 4): unit quaternion (w, x, y, z) turning B components into G components.
    R_BL (n, 3, 3), com_L (n, 3) [m]: each body's frame B in its mesh frame L when the run was made
    (r_B = R_BL (r_L - com_L)), so the mesh's pose follows exactly: R_GL = R_GB R_BL,
    origin_G = p_G - R_GL com_L (``app.run_poses.mesh_frames``), however the project changed since.

    Made from anything array-like; checked on construction (shapes agree, every value finite,
    quaternions of unit length, R_BL rotations), else RunDataError naming the field.
    """

    bodies: tuple[str, ...]
    p_G: np.ndarray
    q_GB: np.ndarray
    R_BL: np.ndarray
    com_L: np.ndarray

    def __post_init__(self) -> None:
        if isinstance(self.bodies, str) or not all(isinstance(b, str) for b in self.bodies):
            raise RunDataError("bodies", "must be a list of body names")
        names = tuple(self.bodies)
        n = len(names)
        if len(set(names)) != n:
            raise RunDataError("bodies", "a body is named twice")
        p = _float_array(self.p_G, "p_G", (None, n, 3))
        k = p.shape[0]
        q = _float_array(self.q_GB, "q_GB", (k, n, 4))
        norm = np.linalg.norm(q, axis=-1)
        if np.any(np.abs(norm - 1.0) > QUATERNION_NORM_TOL):
            worst = float(norm.flat[np.argmax(np.abs(norm - 1.0))])
            raise RunDataError("q_GB", f"a quaternion is not of unit length (|q| = {worst:.6g})")
        R = _float_array(self.R_BL, "R_BL", (n, 3, 3))
        if n and (np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3)).max() > ROTATION_TOL
                  or np.abs(np.linalg.det(R) - 1.0).max() > ROTATION_TOL):
            raise RunDataError("R_BL", "is not a rotation (orthonormal, determinant +1)")
        com = _float_array(self.com_L, "com_L", (n, 3))
        for name, a in (("bodies", names), ("p_G", p), ("q_GB", q), ("R_BL", R), ("com_L", com)):
            if isinstance(a, np.ndarray):
                a.setflags(write=False)
            object.__setattr__(self, name, a)

    @property
    def n_samples(self) -> int:
        return int(self.p_G.shape[0])

    def index(self, body: str) -> int:
        """Position of ``body`` in :attr:`bodies` (ValueError naming it when absent)."""
        try:
            return self.bodies.index(body)
        except ValueError:
            raise ValueError(f"the run has no pose of {body!r} (bodies: {', '.join(self.bodies)})") from None

    def take(self, samples: Any) -> "BodyPoses":
        """The poses at some samples (an index array, a slice or a boolean mask)."""
        return BodyPoses(self.bodies, self.p_G[samples], self.q_GB[samples], self.R_BL, self.com_L)

    def arrays(self) -> dict[str, np.ndarray]:
        """The fields as arrays by POSE_FIELDS name (what is stored)."""
        return {"p_G": self.p_G, "q_GB": self.q_GB, "R_BL": self.R_BL, "com_L": self.com_L}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BodyPoses):
            return NotImplemented
        return self.bodies == other.bodies and all(
            np.array_equal(a, b) for a, b in zip(self.arrays().values(), other.arrays().values()))


def concat_poses(parts: list[BodyPoses]) -> BodyPoses:
    """The samples of several BodyPoses of the same bodies, one after the other."""
    first = parts[0]
    if any(p.bodies != first.bodies for p in parts):
        raise ValueError("poses of different bodies cannot be joined")
    return BodyPoses(first.bodies, np.concatenate([p.p_G for p in parts]), np.concatenate([p.q_GB for p in parts]),
                     first.R_BL, first.com_L)


@dataclass(eq=False)
class RunRecord:
    """One run of a study.

    study:      "equilibrium", "dynamics", "laxity", "moment_arms", ...
    parameters: JSON-able dict of what the run was asked to do (accuracy, end time, ...).
    status:     "completed", "stopped" (by the user), "failed" (message says why; series hold what
                was computed until then).
    series:     named derived series: name -> numpy array whose first axis is the sample index (e.g.
                "time" (k,), "tissue_force_N" (k, n_tissues), "q" (k, nq) of a tree run). Values may
                be NaN where a quantity is undefined (the strain of a tissue of zero rest length).
    labels:     name -> list of column labels for the trailing axis (e.g. body or tissue names).
    summary:    JSON-able dict of scalar results (residuals, laxity, fit metrics).
    poses:      the bodies' poses at every sample (:class:`BodyPoses`), or None (a laxity summary, a
                coordinate sweep).
    units:      name -> unit of each series (SI; "1" dimensionless); filled from :func:`unit_of`
                for a series its writer gave none.
    """

    study: str
    parameters: dict = field(default_factory=dict)
    status: str = "completed"
    message: str = ""
    series: dict[str, np.ndarray] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    id: int | None = None
    poses: BodyPoses | None = None
    units: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.units = {name: self.units.get(name) or unit_of(name) for name in self.series}

    def unit(self, name: str) -> str:
        """The unit of series ``name`` ("" when not known)."""
        return self.units.get(name) or unit_of(name)

    def check(self) -> None:
        """RunDataError naming the field when the run breaks the schema: a series that is not a
        numeric array with a sample axis, a series named like a pose field or an older schema's pose
        encoding (LEGACY_POSE_SERIES), a time that is not finite,
        or poses whose sample count differs from the time's."""
        for name, values in self.series.items():
            if not isinstance(name, str) or not name or name.startswith("pose:"):
                raise RunDataError(str(name), "is not a valid series name")
            if name in LEGACY_POSE_SERIES:
                raise RunDataError(name, "is a pose encoding of an older schema: a run's poses are its BodyPoses")
            a = np.asarray(values)
            if a.dtype.kind not in "biuf":
                raise RunDataError(name, f"holds {a.dtype} values, not numbers")
            if a.ndim == 0:
                raise RunDataError(name, "has no sample axis")
        if "time" in self.series:
            t = _float_array(np.asarray(self.series["time"]).reshape(-1), "time", (None,))
            if self.poses is not None and self.poses.n_samples != t.shape[0]:
                raise RunDataError("p_G", f"{self.poses.n_samples} samples of poses but {t.shape[0]} times")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRecord):
            return NotImplemented
        return (
            (self.study, self.parameters, self.status, self.message, self.labels, self.summary, self.created,
             self.poses, self.units)
            == (other.study, other.parameters, other.status, other.message, other.labels, other.summary, other.created,
                other.poses, other.units)
            and self.series.keys() == other.series.keys()
            and all(_same(self.series[k], other.series[k]) for k in self.series)
        )


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal arrays, NaN where the other has NaN (an undefined value read back is the same run)."""
    a, b = np.asarray(a), np.asarray(b)
    floats = a.dtype.kind in "fc" and b.dtype.kind in "fc"
    return bool(np.array_equal(a, b, equal_nan=floats))
