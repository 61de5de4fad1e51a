"""Former home of the rotation helpers, kept only so that modules not yet moved keep importing:
everything here is re-exported from :mod:`jointmodeller.core.spatial_math` (the one home of
quaternions, rotation matrices, Euler angles and skew matrices). Import from there; delete this
module when nothing imports it (``grep -rn mechanics.rotations``).
"""

from jointmodeller.core.spatial_math import (  # noqa: F401
    euler_to_matrix,
    euler_to_quat,
    matrix_to_euler,
    matrix_to_quat,
    normalize_quat,
    quat_multiply,
    quat_rate_body,
    quat_to_euler,
    quat_to_matrix,
    rotvec_to_quat,
    skew,
)
