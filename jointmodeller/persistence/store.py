"""The project file: open (check, migrate), load, save (one transaction) and results.

Only this package knows SQLAlchemy. Everything read back goes through the same strict decoder as
the JSON import, so a tampered file yields a ValidationError naming the section, row and field.

Work in progress: a project that still breaks a rule can be saved with ``allow_problems=True`` (the
GUI's Save). It is then kept as one *draft* row (``feature_rows`` section ``draft``: the project as
the strict codec's plain data, meshes by content id in the ``meshes`` table) instead of the input
tables, whose foreign keys and unique names an unfinished project may not satisfy yet. Loading
validates as before (a study or the CLI says what is wrong); ``load_project(validate=False)`` gives
the draft back as it was for editing. The next save of a valid project replaces the draft by the
input tables. A JointModeller without drafts refuses such a file (an unknown section) instead of
dropping the draft on its next save.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import numpy as np
from sqlalchemy import create_engine, delete, event, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError, SQLAlchemyError
from sqlalchemy.orm import Session

from jointmodeller.model.codec import row_from_data, row_to_data
from jointmodeller.model.errors import Problem, ProjectFileError, ValidationError
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.results import LEGACY_POSE_SERIES, POSE_FIELDS, BodyPoses, RunDataError, RunRecord
from jointmodeller.model.specs import (
    GROUND,
    Attachment,
    ConstraintSpec,
    ContactPair,
    Experiment,
    Force,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
    WrapObject,
    now_iso,
)
from jointmodeller.model.validation import project_problems, validate_project
from jointmodeller.persistence.schema import check_and_migrate, create_schema, database_error
from jointmodeller.persistence.tables import (
    AttachmentRow,
    FeatureRow,
    ForceRow,
    MassRow,
    MeshRow,
    ProjectInfoRow,
    RunRow,
    SeriesRow,
    SpringRow,
)

PROJECT_SUFFIX = ".jmdb"
RUN_POLICIES = ("keep", "mark", "delete")
FEATURE_SECTIONS = {"contacts": ContactPair, "constraints": ConstraintSpec, "experiments": Experiment,
                    "wrap_objects": WrapObject}
DRAFT_SECTION = "draft"
"""feature_rows section holding a project saved with problems (one row)."""
SERIES_DTYPES = {"float64": "<f8", "float32": "<f4", "int64": "<i8", "int32": "<i4", "bool": "|b1"}
POSE_PREFIX = "pose:"
"""run_series rows named ``pose:p_G``, ``pose:q_GB``, ``pose:R_BL``, ``pose:com_L`` hold a run's
BodyPoses (their body names in runs.bodies); every other row is a named series."""
POSE_UNITS = {"p_G": "m", "q_GB": "1", "R_BL": "1", "com_L": "m"}


def _engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}", future=True)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - exercised by every open
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.close()

    return engine


def _j(value: object) -> str:
    return json.dumps(row_to_data(value), sort_keys=True, allow_nan=False)


def _array_to_blob(a: np.ndarray) -> tuple[str, str, bytes]:
    a = np.asarray(a)
    name = a.dtype.name
    if name not in SERIES_DTYPES:
        a = a.astype(np.float64)
        name = "float64"
    return name, json.dumps(list(a.shape)), np.ascontiguousarray(a, dtype=SERIES_DTYPES[name]).tobytes()


def _blob_to_array(dtype: str, shape_json: str, data: bytes, where: str) -> np.ndarray:
    try:
        shape = json.loads(shape_json)
        if dtype not in SERIES_DTYPES or not isinstance(shape, list) or not all(
            isinstance(n, int) and n >= 0 for n in shape
        ):
            raise ValueError("bad dtype or shape")
        a = np.frombuffer(data, dtype=SERIES_DTYPES[dtype])
        return a.reshape(shape).astype(dtype)
    except (ValueError, TypeError) as exc:
        raise ProjectFileError(f"{where}: stored array is damaged ({exc})") from None


def mesh_id(mesh: MeshData) -> str:
    """Content address of a mesh: identical meshes are stored once."""
    h = hashlib.sha256()
    h.update(mesh.vertices_L.astype("<f8").tobytes())
    h.update(mesh.faces.astype("<i8").tobytes())
    h.update(mesh.source.encode())
    h.update("\n".join(mesh.warnings).encode())
    return h.hexdigest()


def check_folder(path: Path) -> None:
    """ProjectFileError when the folder that should hold ``path`` does not exist or is not a folder."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.exists():
        raise ProjectFileError(f"{path}: the folder {str(folder)!r} does not exist; create it first")
    if not folder.is_dir():
        raise ProjectFileError(f"{path}: {str(folder)!r} is not a folder")


class ProjectStore:
    """One open project file. Use as a context manager or call ``close()``."""

    def __init__(self, path: str | os.PathLike, *, create: bool = False):
        self.path = Path(path)
        try:
            exists = self.path.exists() and self.path.stat().st_size > 0
        except OSError as exc:
            raise ProjectFileError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None
        if self.path.is_dir():
            raise ProjectFileError(f"{self.path}: is a folder, not a project file")
        if not exists and not create:
            raise ProjectFileError(f"{self.path}: no such project file")
        if not exists:
            check_folder(self.path)
        if exists:
            check_and_migrate(self.path)
        self.engine = _engine(self.path)
        if not exists:
            try:
                with self.engine.begin() as conn:
                    create_schema(conn)
            except (DatabaseError, OSError) as exc:
                self.engine.dispose()
                raise database_error(self.path, exc, writing=True) from None

    # -------------------------------------------------------------------- life cycle
    def close(self) -> None:
        """Fold the write-ahead log back into the file and release it."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        except SQLAlchemyError:
            pass
        self.engine.dispose()

    def __enter__(self) -> "ProjectStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _session(self, write: bool) -> Iterator[Session]:
        try:
            with Session(self.engine) as session:
                if write:
                    with session.begin():
                        yield session
                else:
                    yield session
        except (DatabaseError, UnicodeDecodeError) as exc:
            # a read-only file or folder, a full disk or an I/O error is said as such; the rest is damage
            raise database_error(self.path, exc, writing=write) from None

    # -------------------------------------------------------------------- inputs
    def save_project(self, project: Project, *, touch: bool = True, runs: str = "keep", note: str = "",
                     allow_problems: bool = False) -> Project:
        """Validate and write the whole project in one transaction; returns what was written.

        runs: what happens to the stored runs in the same transaction — "keep" them (an edit of the
        inputs), "mark" them as belonging to the earlier model (the inputs were replaced; ``note`` says
        how), or "delete" them. allow_problems: a project that breaks rules is written as a draft
        (module docstring) instead of raising ValidationError.
        """
        if runs not in RUN_POLICIES:
            raise ValueError(f"runs must be one of {RUN_POLICIES}, got {runs!r}")
        if touch:
            project = replace(project, info=replace(project.info, modified=now_iso()))
        draft = False
        if allow_problems:
            draft = bool(project_problems(project))
        else:
            validate_project(project)
        with self._session(write=True) as s:
            if runs == "delete":
                s.execute(delete(SeriesRow))
                s.execute(delete(RunRow))
            elif runs == "mark":
                for row in s.scalars(select(RunRow)):
                    try:
                        params = json.loads(row.parameters)
                    except (ValueError, RecursionError):
                        params = None
                    if isinstance(params, dict) and "earlier_model" in params:
                        continue  # marked by an earlier replacement: keep that note
                    if isinstance(params, dict):
                        params["earlier_model"] = note or f"inputs replaced on {now_iso()}"
                        row.parameters = json.dumps(params, sort_keys=True)
                    row.message = (row.message + " " if row.message else "") + "[earlier model]"
            for table in (ForceRow, AttachmentRow, FeatureRow):
                s.execute(delete(table))
            s.execute(delete(MassRow))
            s.execute(delete(SpringRow))
            s.execute(delete(ProjectInfoRow))
            s.flush()
            self._write_info(s, project.info)
            used: set[str] = set()
            if draft:
                used = self._write_draft(s, project)
            else:
                spring_ids = self._write_springs(s, project.springs)
                mass_ids = self._write_masses(s, project.masses)
                self._write_attachments(s, project.attachments, spring_ids, mass_ids)
                self._write_forces(s, project.forces, mass_ids)
                for section in FEATURE_SECTIONS:
                    for i, row in enumerate(getattr(project, section)):
                        s.add(FeatureRow(section=section, position=i, name=row.name, data=_j(row)))
            s.flush()
            used |= {m for r in s.scalars(select(MassRow)) for m in (r.mesh_id, r.cartilage_id) if m}
            s.execute(delete(MeshRow).where(MeshRow.id.not_in(used)))
        return project

    def _write_draft(self, s: Session, project: Project) -> set[str]:
        """The project (with problems) as one draft row; its meshes go to the meshes table. Returns
        the mesh ids it uses."""
        meshes = [[self._mesh_row(s, m.mesh), self._mesh_row(s, m.cartilage)] for m in project.masses]
        bare = replace(project, masses=tuple(replace(m, mesh=None, cartilage=None) for m in project.masses))
        data = {"project": row_to_data(bare), "meshes": meshes}
        s.add(FeatureRow(section=DRAFT_SECTION, position=0, name=project.info.title,
                         data=json.dumps(data, sort_keys=True, allow_nan=False)))
        return {m for pair in meshes for m in pair if m}

    def has_draft(self) -> bool:
        """True when the file holds a project saved with problems (module docstring)."""
        with self._session(write=False) as s:
            return s.scalars(select(FeatureRow.id).where(FeatureRow.section == DRAFT_SECTION)).first() is not None

    def _write_info(self, s: Session, info: ProjectInfo) -> None:
        s.add(ProjectInfoRow(id=1, title=info.title, description=info.description, author=info.author,
                             units_length=info.units_length, units_angle=info.units_angle,
                             gravity_G=_j(info.gravity_G), notes=info.notes, created=info.created,
                             modified=info.modified))

    def _write_springs(self, s: Session, springs: tuple[SpringType, ...]) -> dict[str, int]:
        rows = [SpringRow(position=i, name=sp.name, model=sp.model, kx=_j(sp.kx), ky=_j(sp.ky), kz=_j(sp.kz),
                          cx=sp.cx, cy=sp.cy, cz=sp.cz, tension_only=sp.tension_only,
                          slack_length_m=sp.slack_length_m, law=sp.law,
                          transition_strain=sp.transition_strain, colour=sp.colour)
                for i, sp in enumerate(springs)]
        s.add_all(rows)
        s.flush()
        return {r.name: r.id for r in rows}

    def _mesh_row(self, s: Session, mesh: MeshData | None) -> str | None:
        if mesh is None:
            return None
        key = mesh_id(mesh)
        if s.get(MeshRow, key) is None:
            s.add(MeshRow(id=key, source=mesh.source, warnings=json.dumps(list(mesh.warnings)),
                          n_vertices=mesh.n_vertices, n_faces=mesh.n_faces,
                          vertices=mesh.vertices_L.astype("<f8").tobytes(),
                          faces=mesh.faces.astype("<i8").tobytes()))
            s.flush()
        return key

    def _write_masses(self, s: Session, masses: tuple[Mass, ...]) -> dict[str, int]:
        rows = []
        for i, m in enumerate(masses):
            rows.append(MassRow(
                position=i, name=m.name, mesh_id=self._mesh_row(s, m.mesh),
                cartilage_id=self._mesh_row(s, m.cartilage), density_kg_m3=m.density_kg_m3,
                mass_kg=m.mass_kg, com_L=_j(m.com_L), inertia_L=_j(m.inertia_L),
                properties_from_mesh=m.properties_from_mesh, position_G=_j(m.position_G),
                euler_deg=_j(m.euler_deg), euler_sequence=m.euler_sequence, fixed=m.fixed,
                joint=None if m.joint is None else _j(m.joint), colour=m.colour))
        s.add_all(rows)
        s.flush()
        return {r.name: r.id for r in rows}

    def _write_attachments(self, s: Session, rows: tuple[Attachment, ...], spring_ids: dict, mass_ids: dict) -> None:
        s.add_all(AttachmentRow(
            position=i, name=a.name, spring_id=spring_ids[a.spring],
            body_a_id=None if a.body_a == GROUND else mass_ids[a.body_a],
            body_b_id=None if a.body_b == GROUND else mass_ids[a.body_b],
            point_a_L=_j(a.point_a_L), point_b_L=_j(a.point_b_L),
            initial_length_m=a.initial_length_m, wraps=a.wraps, via_points=_j(a.via_points),
            wrap_objects=_j(a.wrap_objects), wrap_ranges=_j(a.wrap_ranges), moving_a=_j(a.moving_a),
            moving_b=_j(a.moving_b)) for i, a in enumerate(rows))

    def _write_forces(self, s: Session, rows: tuple[Force, ...], mass_ids: dict) -> None:
        s.add_all(ForceRow(position=i, name=f.name, body_id=mass_ids[f.body], point_L=_j(f.point_L),
                           direction_G=_j(f.direction_G), magnitude_N=f.magnitude_N,
                           profile=_j(f.profile)) for i, f in enumerate(rows))

    def load_project(self, validate: bool = True) -> Project:
        """Read and validate the whole project (``validate=False``: a draft saved with problems comes
        back as it was; the strict decoding of every field still applies)."""
        try:
            with self._session(write=False) as s:
                project = self._read(s)
            return validate_project(project) if validate else project
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ProjectFileError(f"{self.path}: the project file is damaged ({exc})") from None
        except RecursionError:
            raise ProjectFileError(f"{self.path}: the project file is damaged (a row is nested too deeply to be "
                                   "read)") from None

    def _read(self, s: Session) -> Project:
        info_row = s.get(ProjectInfoRow, 1)
        if info_row is None:
            raise ProjectFileError(f"{self.path}: the project section is missing")
        info = row_from_data(ProjectInfo, {
            "title": info_row.title, "description": info_row.description, "author": info_row.author,
            "units_length": info_row.units_length, "units_angle": info_row.units_angle,
            "gravity_G": json.loads(info_row.gravity_G), "notes": info_row.notes,
            "created": info_row.created, "modified": info_row.modified}, "info", 0)
        springs = tuple(row_from_data(SpringType, {
            "name": r.name, "model": r.model, "kx": json.loads(r.kx), "ky": json.loads(r.ky),
            "kz": json.loads(r.kz), "cx": r.cx, "cy": r.cy, "cz": r.cz, "tension_only": r.tension_only,
            "slack_length_m": r.slack_length_m, "law": r.law, "transition_strain": r.transition_strain,
            "colour": r.colour}, "springs", i)
            for i, r in enumerate(s.scalars(select(SpringRow).order_by(SpringRow.position))))
        mass_rows = list(s.scalars(select(MassRow).order_by(MassRow.position)))
        mass_names = {r.id: r.name for r in mass_rows}
        masses = []
        for i, r in enumerate(mass_rows):
            m = row_from_data(Mass, {
                "name": r.name, "density_kg_m3": r.density_kg_m3, "mass_kg": r.mass_kg,
                "com_L": json.loads(r.com_L), "inertia_L": json.loads(r.inertia_L),
                "properties_from_mesh": r.properties_from_mesh, "position_G": json.loads(r.position_G),
                "euler_deg": json.loads(r.euler_deg), "euler_sequence": r.euler_sequence, "fixed": r.fixed,
                "joint": None if r.joint is None else json.loads(r.joint), "colour": r.colour}, "masses", i)
            masses.append(replace(m, mesh=self._read_mesh(r.mesh, r.name),
                                  cartilage=self._read_mesh(r.cartilage, r.name)))
        spring_names = {r.id: r.name for r in s.scalars(select(SpringRow))}
        attachments = tuple(row_from_data(Attachment, {
            "name": r.name, "spring": spring_names[r.spring_id],
            "body_a": GROUND if r.body_a_id is None else mass_names[r.body_a_id],
            "body_b": GROUND if r.body_b_id is None else mass_names[r.body_b_id],
            "point_a_L": json.loads(r.point_a_L), "point_b_L": json.loads(r.point_b_L),
            "initial_length_m": r.initial_length_m, "wraps": r.wraps,
            "via_points": json.loads(r.via_points), "wrap_objects": json.loads(r.wrap_objects),
            "wrap_ranges": json.loads(r.wrap_ranges), "moving_a": json.loads(r.moving_a),
            "moving_b": json.loads(r.moving_b)}, "attachments", i)
            for i, r in enumerate(s.scalars(select(AttachmentRow).order_by(AttachmentRow.position))))
        forces = tuple(row_from_data(Force, {
            "name": r.name, "body": mass_names[r.body_id], "point_L": json.loads(r.point_L),
            "direction_G": json.loads(r.direction_G), "magnitude_N": r.magnitude_N,
            "profile": json.loads(r.profile)}, "forces", i)
            for i, r in enumerate(s.scalars(select(ForceRow).order_by(ForceRow.position))))
        known = (*FEATURE_SECTIONS, DRAFT_SECTION)
        unknown = sorted(set(s.scalars(select(FeatureRow.section).where(FeatureRow.section.not_in(known))
                                       .distinct())), key=str)
        if unknown:  # refused, not dropped: the next save would delete them
            names = ", ".join(repr(x) for x in unknown[:5])
            raise ProjectFileError(f"{self.path}: holds rows of a section this JointModeller does not know ({names}); "
                                   "written by a newer version, or damaged. The file was not changed.")
        draft = s.scalars(select(FeatureRow).where(FeatureRow.section == DRAFT_SECTION)).first()
        if draft is not None:
            return self._read_draft(s, draft)
        features = {}
        for section, cls in FEATURE_SECTIONS.items():
            rows = s.scalars(select(FeatureRow).where(FeatureRow.section == section).order_by(FeatureRow.position))
            features[section] = tuple(row_from_data(cls, json.loads(r.data), section, i) for i, r in enumerate(rows))
        return Project(info=info, springs=springs, masses=tuple(masses), attachments=attachments,
                       forces=forces, **features)

    def _read_draft(self, s: Session, row: FeatureRow) -> Project:
        """The project of a draft row, meshes read back from the meshes table (not validated)."""
        data = json.loads(row.data)
        if not isinstance(data, dict) or not isinstance(data.get("meshes"), list):
            raise ProjectFileError(f"{self.path}: the draft project is damaged")
        project = row_from_data(Project, data.get("project"), "draft", 0)
        ids = data["meshes"]
        if len(ids) != len(project.masses) or not all(isinstance(p, list) and len(p) == 2 for p in ids):
            raise ProjectFileError(f"{self.path}: the draft project's mesh list does not match its masses")
        masses = []
        for m, (mesh_id, cart_id) in zip(project.masses, ids):
            meshes = []
            for key in (mesh_id, cart_id):
                mesh_row = s.get(MeshRow, key) if isinstance(key, str) else None
                if key is not None and mesh_row is None:
                    raise ProjectFileError(f"{self.path}: a mesh of the draft's mass {m.name!r} is missing")
                meshes.append(self._read_mesh(mesh_row, m.name))
            masses.append(replace(m, mesh=meshes[0], cartilage=meshes[1]))
        return replace(project, masses=tuple(masses))

    def _read_mesh(self, row: MeshRow | None, mass: str) -> MeshData | None:
        if row is None:
            return None
        try:
            v = np.frombuffer(row.vertices, dtype="<f8").reshape(row.n_vertices, 3).astype(np.float64)
            f = np.frombuffer(row.faces, dtype="<i8").reshape(row.n_faces, 3).astype(np.int64)
            return MeshData(v, f, source=row.source, warnings=tuple(json.loads(row.warnings)))
        except ValueError as exc:
            raise ValidationError(Problem("Masses", mass, "mesh", f"stored mesh is damaged ({exc})")) from None

    # -------------------------------------------------------------------- results
    def save_run(self, run: RunRecord) -> int:
        """Store a run with its poses and series in one transaction; returns its id. A run that breaks
        the schema (model.results.RunRecord.check) is refused with ValueError naming the field."""
        run.check()
        with self._session(write=True) as s:
            row = RunRow(study=run.study, parameters=json.dumps(run.parameters, sort_keys=True),
                         status=run.status, message=run.message, created=run.created,
                         labels=json.dumps(run.labels, sort_keys=True),
                         summary=json.dumps(run.summary, sort_keys=True),
                         bodies=json.dumps([] if run.poses is None else list(run.poses.bodies)))
            if run.poses is not None:
                for name, values in run.poses.arrays().items():
                    dtype, shape, data = _array_to_blob(values)
                    row.series.append(SeriesRow(name=POSE_PREFIX + name, dtype=dtype, shape=shape, data=data,
                                                unit=POSE_UNITS[name]))
            for name, values in run.series.items():
                dtype, shape, data = _array_to_blob(values)
                row.series.append(SeriesRow(name=name, dtype=dtype, shape=shape, data=data, unit=run.unit(name)))
            s.add(row)
            s.flush()
            run.id = row.id
            return row.id

    def list_runs(self) -> list[RunRecord]:
        """Every stored run, oldest first, without its series (cheap)."""
        with self._session(write=False) as s:
            return [self._run(r, with_series=False) for r in s.scalars(select(RunRow).order_by(RunRow.id))]

    def load_run(self, run_id: int) -> RunRecord:
        with self._session(write=False) as s:
            row = s.get(RunRow, run_id)
            if row is None:
                raise KeyError(f"no run {run_id} in {self.path}")
            return self._run(row, with_series=True)

    def delete_run(self, run_id: int) -> None:
        with self._session(write=True) as s:
            row = s.get(RunRow, run_id)
            if row is not None:
                s.delete(row)

    def _run(self, r: RunRow, with_series: bool) -> RunRecord:
        """The run of row ``r``, checked: damaged JSON, a damaged array, a pose that breaks the schema
        (shapes, finiteness, unit quaternions) or a pose series of an older schema left unmigrated is
        a ProjectFileError naming the file, the run and the field."""
        where = f"{self.path}: run {r.id}"
        try:
            parameters, labels, summary = json.loads(r.parameters), json.loads(r.labels), json.loads(r.summary)
            bodies = json.loads(r.bodies)
        except (json.JSONDecodeError, TypeError, RecursionError) as exc:
            raise ProjectFileError(f"{where} is damaged ({exc})") from None
        if not isinstance(parameters, dict) or not isinstance(labels, dict) or not isinstance(summary, dict):
            raise ProjectFileError(f"{where} is damaged (its parameters, labels or summary are not tables)")
        series: dict[str, np.ndarray] = {}
        pose: dict[str, np.ndarray] = {}
        units: dict[str, str] = {}
        for x in (r.series if with_series else ()):
            if not isinstance(x.name, str):
                raise ProjectFileError(f"{where}: a series name is damaged ({x.name!r})")
            a = _blob_to_array(x.dtype, x.shape, x.data, f"{where} › {x.name}")
            if x.name.startswith(POSE_PREFIX):
                key = x.name[len(POSE_PREFIX):]
                if key not in POSE_FIELDS:
                    raise ProjectFileError(f"{where} › {x.name}: not a pose field of this schema "
                                           f"({', '.join(POSE_FIELDS)})")
                pose[key] = a
            elif x.name in LEGACY_POSE_SERIES:  # the migration could not convert it
                raise ProjectFileError(f"{where} › {x.name}: a pose series of an older schema that could not be "
                                       "migrated (damaged or inconsistent); delete the run")
            else:
                series[x.name] = a
                units[x.name] = x.unit if isinstance(x.unit, str) else ""
        try:
            poses = None
            if pose or (with_series and bodies):
                if not isinstance(bodies, list):
                    raise RunDataError("bodies", "is not a list of body names")
                missing = [f for f in POSE_FIELDS if f not in pose]
                if missing:
                    raise RunDataError(missing[0], "is missing from the run's poses")
                poses = BodyPoses(tuple(bodies), **pose)
            run = RunRecord(study=r.study, parameters=parameters, status=r.status, message=r.message, series=series,
                            labels=labels, summary=summary, created=r.created, id=r.id, poses=poses, units=units)
            run.check()
        except RunDataError as exc:
            raise ProjectFileError(f"{where} › {exc}") from None
        return run


def save_project(path: str | os.PathLike, project: Project, *, touch: bool = True, runs: str = "keep",
                 note: str = "", allow_problems: bool = False) -> Project:
    """Write ``project`` to ``path`` (created if new) in one transaction. Returns what was written.

    A new file is built beside the target and moved into place, so a crash never leaves a
    half-made project file under the user's name, and a failed one (full disk, read-only folder)
    leaves no .partial, -wal or -shm file behind. ``touch``: stamp the modification time (an import
    keeps the one it was given). runs, note: what happens to an existing file's stored runs
    (ProjectStore.save_project). allow_problems: a project that breaks rules is stored as a draft
    (module docstring) instead of raising ValidationError.
    """
    path = Path(path)
    if not allow_problems:
        validate_project(project)
    if path.is_dir():
        raise ProjectFileError(f"{path}: is a folder, not a project file")
    if path.exists() and path.stat().st_size > 0:
        with ProjectStore(path) as store:
            return store.save_project(project, touch=touch, runs=runs, note=note, allow_problems=allow_problems)
    check_folder(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not os.access(folder, os.W_OK):
        raise ProjectFileError(f"{path}: cannot be written: its folder {str(folder)!r} is read-only")
    tmp = path.with_name(path.name + ".partial")
    leftovers = (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm"))
    try:
        for p in leftovers:
            p.unlink(missing_ok=True)
        with ProjectStore(tmp, create=True) as store:
            written = store.save_project(project, touch=touch, allow_problems=allow_problems)
        os.replace(tmp, path)
    except BaseException as exc:
        # a failed write (full disk, read-only folder, bad text, interrupt) leaves nothing behind: a
        # stray .partial-wal would otherwise make the next attempt fail in turn
        for p in leftovers:
            with contextlib.suppress(OSError):
                p.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ProjectFileError(f"{path}: cannot be written ({exc.strerror or exc})"
                                   + (" — the disk is full" if exc.errno == errno.ENOSPC else "")) from None
        if isinstance(exc, ProjectFileError):  # about the file being built: say it about the target
            raise ProjectFileError(str(exc).replace(str(tmp), str(path))) from None
        raise
    return written


def load_project(path: str | os.PathLike, validate: bool = True) -> Project:
    """Open, check, migrate if older, and read a project file (``validate=False``: a draft saved with
    problems comes back as it was, for editing)."""
    with ProjectStore(path) as store:
        return store.load_project(validate=validate)


def is_project_file(path: str | os.PathLike) -> bool:
    """Cheap test: an SQLite file marked with our application id."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
        return header[:16] == b"SQLite format 3\x00" and int.from_bytes(header[68:72], "big") == 0x4A4D4442
    except OSError:
        return False


__all__ = ["ProjectStore", "save_project", "load_project", "is_project_file", "PROJECT_SUFFIX"]
