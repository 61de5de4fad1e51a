"""model.specs.vec3 / mat3: what a spec's Vec3 / Mat3 field is given from numpy or lists."""

import numpy as np
import pytest

from jointmodeller.model.specs import mat3, vec3


def test_vec3_gives_three_python_floats():
    v = vec3(np.array([1, 2.5, -3], dtype=np.float32))
    assert v == (1.0, 2.5, -3.0)
    assert all(type(x) is float for x in v)


def test_mat3_gives_three_rows_of_three_floats():
    m = mat3(np.eye(3))
    assert m == ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    assert all(type(x) is float for row in m for x in row)


@pytest.mark.parametrize("bad", [(1.0, 2.0), (1.0, 2.0, 3.0, 4.0), ()])
def test_vec3_refuses_anything_but_three(bad):
    with pytest.raises(ValueError):
        vec3(bad)


def test_mat3_refuses_a_2x3_matrix():
    with pytest.raises(ValueError):
        mat3([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
