"""Plain, validated data of a project: the five MJM input sections and the feature lists."""

from jointmodeller.model.errors import (
    JointModellerError,
    MeshError,
    Problem,
    ProjectFileError,
    SimulationError,
    ValidationError,
)
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import (
    GROUND,
    Attachment,
    ConstraintSpec,
    ContactPair,
    Experiment,
    Force,
    Frame,
    FunctionSpec,
    JointSpec,
    LoadProfile,
    Mass,
    MeasuredPoint,
    Project,
    ProjectInfo,
    SpringType,
    ViaPoint,
    WrapObject,
)

__all__ = [
    "GROUND", "Attachment", "ConstraintSpec", "ContactPair", "Experiment", "Force", "Frame",
    "FunctionSpec", "JointModellerError", "JointSpec", "LoadProfile", "Mass", "MeasuredPoint",
    "MeshData", "MeshError", "Problem", "Project", "ProjectFileError", "ProjectInfo", "RunRecord",
    "SimulationError", "SpringType", "ValidationError", "ViaPoint", "WrapObject",
]
