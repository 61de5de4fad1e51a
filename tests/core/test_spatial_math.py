"""core.spatial_math: round trips, agreement with scipy's Rotation, handedness of principal axes, and
the numba scalar versions equal to the vectorised ones."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jointmodeller.core import spatial_math as sm

RNG = np.random.default_rng(14)
ULP = 1e-15  # numba's and numpy's sin/cos may round differently in the last bit


def _quats(n: int = 50) -> np.ndarray:
    q = RNG.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _scipy_quat(q_wxyz: np.ndarray) -> Rotation:
    return Rotation.from_quat(np.roll(np.asarray(q_wxyz), -1, axis=-1))  # scipy is scalar-last


def test_quaternion_matrix_round_trip_and_scipy():
    q = _quats()
    R = sm.quat_to_matrix(3.0 * q)  # not unit: normalised on the fly
    np.testing.assert_allclose(R, _scipy_quat(q).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-13)
    back = sm.matrix_to_quat(R)
    assert np.all(back[:, 0] >= 0)
    np.testing.assert_allclose(back, q * np.sign(q[:, :1]), atol=1e-13)
    assert sm.matrix_to_quat(R[0]).shape == (4,)


def test_quaternion_product_composes_rotations():
    a, b = _quats(20), _quats(20)
    np.testing.assert_allclose(sm.quat_to_matrix(sm.quat_multiply(a, b)),
                               sm.quat_to_matrix(a) @ sm.quat_to_matrix(b), atol=1e-14)
    w_B = RNG.normal(size=(20, 3))
    # q̇ = ½ q ⊗ (0, w_B) is Ṙ = R [w_B×]
    h = 1e-7
    rate = sm.quat_rate_body(a, w_B)
    dR = (sm.quat_to_matrix(a + h * rate) - sm.quat_to_matrix(a - h * rate)) / (2 * h)
    np.testing.assert_allclose(dR, sm.quat_to_matrix(a) @ sm.skew(w_B), atol=1e-7)


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e-9, 0.0])
def test_rotation_vectors_against_scipy(scale):
    v = RNG.normal(size=(30, 3))
    v = v / np.linalg.norm(v, axis=1, keepdims=True) * RNG.uniform(0.0, 3.1, size=(30, 1)) * scale
    q = sm.rotvec_to_quat(v)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(sm.quat_to_matrix(q), Rotation.from_rotvec(v).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(sm.quat_to_rotvec(q), v, atol=1e-14)
    np.testing.assert_allclose(sm.quat_to_rotvec(-q), v, atol=1e-14)  # either sign of q
    np.testing.assert_allclose(sm.rotvec_to_matrix(v), Rotation.from_rotvec(v).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(sm.matrix_to_rotvec(sm.rotvec_to_matrix(v)), v, atol=1e-12)


def test_axis_angle_normalises_the_axis_broadcasts_and_takes_a_zero_axis_as_identity():
    axis = RNG.normal(size=(10, 3)) * 5.0
    angle = RNG.uniform(-4.0, 4.0, size=10)
    unit = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    R = sm.axis_angle_matrix(axis, angle)
    np.testing.assert_allclose(R, Rotation.from_rotvec(unit * angle[:, None]).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(R @ unit[..., None], unit[..., None], atol=1e-14)  # the axis stays
    assert sm.axis_angle_matrix(axis[0], angle).shape == (10, 3, 3)
    np.testing.assert_array_equal(sm.axis_angle_matrix(np.zeros(3), 1.0), np.eye(3))


@pytest.mark.parametrize("sequence", ["XYZ", "ZYX", "xyz", "ZXZ"])
def test_euler_round_trip_and_meaning(sequence):
    e = RNG.uniform(-1.2, 1.2, size=(15, 3))
    R = sm.euler_to_matrix(e, sequence)
    np.testing.assert_allclose(R, Rotation.from_euler(sequence, e).as_matrix(), atol=1e-15)
    np.testing.assert_allclose(sm.euler_to_matrix(sm.matrix_to_euler(R, sequence), sequence), R, atol=1e-13)
    np.testing.assert_allclose(sm.quat_to_matrix(sm.euler_to_quat(e, sequence)), R, atol=1e-14)
    np.testing.assert_allclose(sm.euler_to_matrix(sm.quat_to_euler(sm.euler_to_quat(e, sequence), sequence),
                                                  sequence), R, atol=1e-13)
    if sequence == "XYZ":  # intrinsic: about x, then the new y, then the new z
        ex, ey, ez = np.eye(3)
        for k in range(len(e)):
            ref = (sm.axis_angle_matrix(ex, e[k, 0]) @ sm.axis_angle_matrix(ey, e[k, 1])
                   @ sm.axis_angle_matrix(ez, e[k, 2]))
            np.testing.assert_allclose(R[k], ref, atol=1e-14)


@pytest.mark.parametrize("sequence", ["ZYX", "XYZ", "zyx", "xyz", "ZXY", "yzx", "ZXZ", "xzx"])
def test_euler_to_matrix_has_scipys_bits_without_scipy(sequence):
    """euler_to_matrix composes the elementary quaternions in numpy (scipy.spatial is not imported to
    pose a bone): bit for bit Rotation.from_euler(...).as_matrix(), batched and one at a time,
    including zero, right and straight angles and -0.0."""
    e = RNG.uniform(-7.0, 7.0, size=(400, 3))
    e[:20] = 0.0
    e[20:40] = -0.0
    e[40:60, 1] = np.pi / 2
    e[60:80] = RNG.integers(-3, 4, size=(20, 3)) * np.pi / 2
    ref = Rotation.from_euler(sequence, e).as_matrix()
    assert sm.euler_to_matrix(e, sequence).tobytes() == ref.tobytes()
    assert sm.euler_to_matrix(e.reshape(20, 20, 3), sequence).tobytes() == ref.tobytes()
    for k in range(0, 400, 7):
        assert sm.euler_to_matrix(e[k], sequence).tobytes() == ref[k].tobytes()
    e[80, 0] = np.nan  # NaN stays NaN (its sign bit may differ)
    np.testing.assert_array_equal(sm.euler_to_matrix(e, sequence), Rotation.from_euler(sequence, e).as_matrix())
    with pytest.raises(ValueError):
        sm.euler_to_matrix(np.zeros(3), "ZZX")  # scipy's own checks for anything else


def test_importing_spatial_math_imports_neither_numba_nor_scipy_spatial():
    """numba (the kernels) and scipy's Rotation are imported where first used; the kernels are still
    served by spatial_math."""
    import subprocess
    import sys

    code = ("import sys; from jointmodeller.core import spatial_math as sm; import numpy as np; "
            "sm.euler_to_matrix(np.array([0.1, 0.2, 0.3])); sm.quat_to_matrix(np.array([1.0, 0, 0, 0])); "
            "print(sorted(m for m in ('numba', 'scipy.spatial') if m in sys.modules)); "
            "from jointmodeller.core.spatial_math import axis_rotation, rodrigues_into; "
            "from jointmodeller.core import spatial_kernels as k; assert axis_rotation is k.axis_rotation; "
            "assert sm.matrix_to_quat(np.eye(3)).shape == (4,); print('scipy.spatial' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_skew_is_the_cross_product():
    v, w = RNG.normal(size=(2, 12, 3))
    S = sm.skew(v)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", S, w), np.cross(v, w), atol=1e-15)
    np.testing.assert_array_equal(S, -np.swapaxes(S, -1, -2))


def test_principal_axes_are_ascending_right_handed_rows_and_keep_their_convention():
    for _ in range(30):
        A = RNG.normal(size=(3, 3))
        I = A @ A.T + 0.1 * np.eye(3)
        m, R_BL = sm.principal_axes(I + 1e-14 * A)  # a slightly asymmetric input is symmetrised
        assert np.all(np.diff(m) >= 0)
        assert np.linalg.det(R_BL) == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(R_BL @ R_BL.T, np.eye(3), atol=1e-13)
        np.testing.assert_allclose(R_BL @ I @ R_BL.T, np.diag(m), atol=1e-12 * m[-1])
        # the body frames of stored results depend on these signs: LAPACK's eigenvectors as rows,
        # the third flipped when that makes the frame right-handed
        w, V = np.linalg.eigh(0.5 * ((I + 1e-14 * A) + (I + 1e-14 * A).T))
        V[:, 2] *= np.sign(np.linalg.det(V))
        np.testing.assert_array_equal(R_BL, V.T)
    m, R_BL = sm.principal_axes(np.diag([3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(m, [1.0, 2.0, 3.0])
    assert np.linalg.det(R_BL) == pytest.approx(1.0)
    np.testing.assert_allclose(np.abs(R_BL), [[0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_numba_scalar_versions_equal_the_vectorised_ones():
    axes = RNG.normal(size=(40, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = RNG.uniform(-7.0, 7.0, size=40)
    vec = sm.axis_angle_matrix(axes, angles)
    flat = np.zeros(9 * 40 + 3)
    for k in range(40):
        np.testing.assert_allclose(sm.axis_rotation(axes[k], angles[k]), vec[k], rtol=0, atol=ULP)
        sm.rodrigues_into(axes[k, 0], axes[k, 1], axes[k, 2], angles[k], flat, 3 + 9 * k)
    np.testing.assert_allclose(flat[3:].reshape(40, 3, 3), vec, rtol=0, atol=ULP)
    q = 2.0 * _quats(40)
    vec = sm.quat_to_matrix(q)
    for k in range(40):
        np.testing.assert_allclose(sm.quat_to_R(q[k]), vec[k], rtol=0, atol=ULP)
        sm.quat_to_matrix_into(q[k, 0], q[k, 1], q[k, 2], q[k, 3], flat, 9 * k)
    np.testing.assert_allclose(flat[:360].reshape(40, 3, 3), vec, rtol=0, atol=ULP)
    v, w = RNG.normal(size=(2, 40, 3))
    for k in range(40):
        np.testing.assert_array_equal(sm.skew3(v[k]), sm.skew(v[k]))
        np.testing.assert_allclose(sm.cross3(v[k], w[k]), np.cross(v[k], w[k]), rtol=0, atol=ULP)
