"""Mobilizer backend: minimal-coordinate multibody dynamics (seeds 000/001, 002, 003).

Build a ``MultibodySystem`` from ``BodySpec``s (each with one ``MobilizerSpec`` to its parent),
constraints and force elements; evaluate it at a ``State``; integrate with ``simulate``; moment
arms with ``moment_arms.moment_arm``.
"""

from jointmodeller.core.state import State

from .constraints import (
    Ball,
    ConstantAngle,
    CoordinateCoupler,
    PointOnLine,
    PointOnPlane,
    PrescribedMotion,
    Rod,
    Weld,
    assemble,
    constraint_rows,
    project_positions,
    project_velocities,
)
from .functions import Constant, Linear, Multiplier, Polynomial, Spline
from .integrate import Trajectory, simulate
from .moment_arms import PointPath, coupling_matrix, generalized_forces, moment_arm, moment_arm_excursion
from .spatial import transform
from .system import BodySpec, MobilizerSpec, MultibodySystem

__all__ = [
    "Ball", "BodySpec", "Constant", "ConstantAngle", "CoordinateCoupler", "Linear", "MobilizerSpec",
    "Multiplier", "MultibodySystem", "PointOnLine", "PointOnPlane", "PointPath", "Polynomial",
    "PrescribedMotion", "Rod", "Spline", "State", "Trajectory", "Weld", "assemble",
    "constraint_rows", "coupling_matrix", "generalized_forces", "moment_arm",
    "moment_arm_excursion", "project_positions", "project_velocities", "simulate",
    "transform",
]
