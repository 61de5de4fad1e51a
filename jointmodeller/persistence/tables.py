"""SQLAlchemy ORM tables of a project file (.jmdb). Vectors and small tuples are JSON text columns;
meshes and result series are raw little-endian array blobs (never pickled)."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

APPLICATION_ID = 0x4A4D4442  # "JMDB": marks a SQLite file as a JointModeller project


class StrictBoolean(TypeDecorator):
    """A BOOLEAN column (0 or 1 in the file) read back strictly: SQLite keeps whatever is written, and
    SQLAlchemy's Boolean would read a tampered 'maybe' as true. Anything but 0 or 1 is returned as it
    is, so the strict decoder refuses it naming the section, row and field."""

    impl = Boolean
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return value

    def result_processor(self, dialect, coltype):
        def process(value):
            if type(value) is int and value in (0, 1):
                return bool(value)
            return value

        return process


class Base(DeclarativeBase):
    pass


class ProjectInfoRow(Base):
    __tablename__ = "project_info"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text)
    author: Mapped[str] = mapped_column(Text)
    units_length: Mapped[str] = mapped_column(String(8))
    units_angle: Mapped[str] = mapped_column(String(8))
    gravity_G: Mapped[str] = mapped_column(Text)
    notes: Mapped[str] = mapped_column(Text)
    created: Mapped[str] = mapped_column(String(40))
    modified: Mapped[str] = mapped_column(String(40))


class MeshRow(Base):
    __tablename__ = "meshes"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the content
    source: Mapped[str] = mapped_column(Text)
    warnings: Mapped[str] = mapped_column(Text)
    n_vertices: Mapped[int] = mapped_column(Integer)
    n_faces: Mapped[int] = mapped_column(Integer)
    vertices: Mapped[bytes] = mapped_column(LargeBinary)
    faces: Mapped[bytes] = mapped_column(LargeBinary)


class SpringRow(Base):
    __tablename__ = "springs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(Text, unique=True)
    model: Mapped[str] = mapped_column(String(16))
    kx: Mapped[str] = mapped_column(Text)
    ky: Mapped[str] = mapped_column(Text)
    kz: Mapped[str] = mapped_column(Text)
    cx: Mapped[float] = mapped_column(Float)
    cy: Mapped[float] = mapped_column(Float)
    cz: Mapped[float] = mapped_column(Float)
    tension_only: Mapped[bool] = mapped_column(StrictBoolean)
    slack_length_m: Mapped[float | None] = mapped_column(Float, nullable=True)
    law: Mapped[str] = mapped_column(String(16))
    transition_strain: Mapped[float] = mapped_column(Float)
    colour: Mapped[str] = mapped_column(String(16))


class MassRow(Base):
    __tablename__ = "masses"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(Text, unique=True)
    mesh_id: Mapped[str | None] = mapped_column(ForeignKey("meshes.id"), nullable=True)
    cartilage_id: Mapped[str | None] = mapped_column(ForeignKey("meshes.id"), nullable=True)
    density_kg_m3: Mapped[float | None] = mapped_column(Float, nullable=True)
    mass_kg: Mapped[float] = mapped_column(Float)
    com_L: Mapped[str] = mapped_column(Text)
    inertia_L: Mapped[str] = mapped_column(Text)
    properties_from_mesh: Mapped[bool] = mapped_column(StrictBoolean)
    position_G: Mapped[str] = mapped_column(Text)
    euler_deg: Mapped[str] = mapped_column(Text)
    euler_sequence: Mapped[str] = mapped_column(String(8))
    fixed: Mapped[bool] = mapped_column(StrictBoolean)
    joint: Mapped[str | None] = mapped_column(Text, nullable=True)
    colour: Mapped[str] = mapped_column(String(16))
    mesh: Mapped[MeshRow | None] = relationship(foreign_keys=[mesh_id])
    cartilage: Mapped[MeshRow | None] = relationship(foreign_keys=[cartilage_id])


class AttachmentRow(Base):
    __tablename__ = "attachments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(Text, unique=True)
    spring_id: Mapped[int] = mapped_column(ForeignKey("springs.id", ondelete="RESTRICT"))
    body_a_id: Mapped[int | None] = mapped_column(ForeignKey("masses.id", ondelete="RESTRICT"), nullable=True)
    body_b_id: Mapped[int | None] = mapped_column(ForeignKey("masses.id", ondelete="RESTRICT"), nullable=True)
    point_a_L: Mapped[str] = mapped_column(Text)
    point_b_L: Mapped[str] = mapped_column(Text)
    initial_length_m: Mapped[float | None] = mapped_column(Float, nullable=True)
    wraps: Mapped[bool] = mapped_column(StrictBoolean)
    via_points: Mapped[str] = mapped_column(Text)
    wrap_objects: Mapped[str] = mapped_column(Text)
    wrap_ranges: Mapped[str] = mapped_column(Text, default="[]")
    moving_a: Mapped[str] = mapped_column(Text, default="[]")
    moving_b: Mapped[str] = mapped_column(Text, default="[]")


class ForceRow(Base):
    __tablename__ = "forces"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(Text, unique=True)
    body_id: Mapped[int] = mapped_column(ForeignKey("masses.id", ondelete="RESTRICT"))
    point_L: Mapped[str] = mapped_column(Text)
    direction_G: Mapped[str] = mapped_column(Text)
    magnitude_N: Mapped[float] = mapped_column(Float)
    profile: Mapped[str] = mapped_column(Text)


class FeatureRow(Base):
    """Rows of the feature lists (contacts, constraints, experiments) as validated JSON documents."""

    __tablename__ = "feature_rows"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    section: Mapped[str] = mapped_column(String(32), index=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(Text)
    data: Mapped[str] = mapped_column(Text)


class RunRow(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study: Mapped[str] = mapped_column(String(64))
    parameters: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    created: Mapped[str] = mapped_column(String(40))
    labels: Mapped[str] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text)
    bodies: Mapped[str] = mapped_column(Text, default="[]")
    series: Mapped[list["SeriesRow"]] = relationship(cascade="all, delete-orphan", order_by="SeriesRow.id")


class SeriesRow(Base):
    __tablename__ = "run_series"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(Text)
    dtype: Mapped[str] = mapped_column(String(16))
    shape: Mapped[str] = mapped_column(Text)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    unit: Mapped[str] = mapped_column(Text, default="")
