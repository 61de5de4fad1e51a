"""io.atomic_files: a file is replaced whole or not at all, and a failed write leaves nothing behind."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.io.atomic_files import save_npz_atomically, write_atomically, write_bytes_atomically


def test_a_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "out.json"
    path.write_bytes(b"old")
    assert write_bytes_atomically(path, b'{"new": 1}') == path
    assert path.read_bytes() == b'{"new": 1}'
    save_npz_atomically(tmp_path / "a.npz", {"x": np.arange(3)})
    with np.load(tmp_path / "a.npz", allow_pickle=False) as npz:
        assert npz["x"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "out.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_bytes(b"old")

    def half_then_fail(fh):
        fh.write(b'{"ne')
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(path, half_then_fail)
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_missing_folder_is_an_error_not_a_folder_made(tmp_path):
    with pytest.raises(OSError):
        write_bytes_atomically(tmp_path / "nowhere" / "out.json", b"x")
    assert list(tmp_path.iterdir()) == []
