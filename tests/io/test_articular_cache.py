"""The disk cache of articular sheets (io.articular_cache): the cached mask is the computed one, a
changed mesh or threshold is another entry, and a damaged or foreign file is recomputed, never trusted."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.articular import articular_face_mask
from jointmodeller.io import articular_cache
from jointmodeller.io.articular_cache import cache_key, cached_articular_face_mask
from tests.core.geometry.test_articular import cap_layer


@pytest.fixture(scope="module")
def layer():
    r, h = 0.02, 0.002
    cap = cap_layer(r, h)
    bone = trimesh.creation.icosphere(4, radius=r)
    return (np.asarray(cap.vertices), np.asarray(cap.faces), np.asarray(bone.vertices), np.asarray(bone.faces))


def test_a_cached_mask_is_the_computed_one_and_is_read_back(layer, tmp_path, monkeypatch):
    expected = articular_face_mask(*layer)
    assert 0 < expected.sum() < len(expected)  # the cap has an articular side and other faces
    first = cached_articular_face_mask(*layer, folder=tmp_path)
    assert np.array_equal(first, expected)
    assert len(list(tmp_path.glob("*.npz"))) == 1

    def fail(*args, **kwargs):
        raise AssertionError("the mask was computed again instead of read from the cache")

    monkeypatch.setattr(articular_cache, "articular_face_mask", fail)
    assert np.array_equal(cached_articular_face_mask(*layer, folder=tmp_path), expected)


def test_another_mesh_or_threshold_is_another_entry(layer):
    v, f, bv, bf = layer
    key = cache_key(v, f, bv, bf, 0.5)
    assert cache_key(v, f, bv, bf, 0.6) != key
    moved = v.copy()
    moved[0, 0] += 1e-9
    assert cache_key(moved, f, bv, bf, 0.5) != key
    assert cache_key(v, f, bv * 1.01, bf, 0.5) != key
    assert cache_key(v.astype(np.float32), f.astype(np.int32), bv, bf, 0.5) == key  # content, not dtype


@pytest.mark.parametrize("damage", ["truncated", "foreign key", "wrong shape", "not a zip"])
def test_a_damaged_file_is_recomputed_and_rewritten(layer, tmp_path, damage):
    expected = articular_face_mask(*layer)
    cached_articular_face_mask(*layer, folder=tmp_path)
    (path,) = tmp_path.glob("*.npz")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:40])
    elif damage == "foreign key":
        np.savez(path, cache_key=np.array("0" * 64), mask=~expected)
    elif damage == "wrong shape":
        np.savez(path, cache_key=np.array(path.stem), mask=np.ones(3, bool))
    else:
        path.write_bytes(b"#!/bin/sh\necho not an npz\n")
    assert np.array_equal(cached_articular_face_mask(*layer, folder=tmp_path), expected)
    with np.load(path, allow_pickle=False) as npz:  # rewritten with the right content
        assert npz["cache_key"].item() == path.stem and np.array_equal(npz["mask"], expected)


def test_a_folder_that_cannot_be_written_costs_speed_not_the_result(layer, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder should be")  # mkdir fails, even for root
    mask = cached_articular_face_mask(*layer, folder=blocker / "articular")
    assert np.array_equal(mask, articular_face_mask(*layer))
