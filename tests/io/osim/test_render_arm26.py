"""The imported arm26 renders (bones, muscle paths, wrap objects): the docs screenshot's recipe."""

from __future__ import annotations

import pytest

from tests.io.osim.render_arm26 import render_arm26


@pytest.mark.slow
def test_render_arm26(shared_models, artifacts_dir):
    pytest.importorskip("pyvista")
    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    out = render_arm26(path, artifacts_dir / "arm26.png", elbow_deg=90.0, size=(500, 500))
    import matplotlib.image as mpimg

    img = mpimg.imread(str(out))
    assert img.shape[:2] == (500, 500)
    assert (img[..., :3].sum(axis=2) < 2.4).mean() > 0.05  # bones and paths drawn, not a blank frame
