"""What the fuzz suite found, each a named regression test that fails without its fix."""

from __future__ import annotations

import pytest

from jointmodeller.io.meshes import read_mesh
from jointmodeller.model.errors import MeshError


def test_obj_with_a_two_number_vertex_line_is_a_mesh_error(tmp_path):
    """A damaged "v x y" line made trimesh read every vertex with two columns; clean_surface then
    failed with numpy's "When changing to a larger dtype ..." ValueError (a traceback)."""
    path = tmp_path / "damaged.obj"
    path.write_text("v 0 0 0\nv 10 0 0\nv 0 10 0\nv 0 0\nf 1 2 3\nf 1 3 4\n")
    with pytest.raises(MeshError, match=r"damaged\.obj.*not rows of three numbers"):
        read_mesh(path)
