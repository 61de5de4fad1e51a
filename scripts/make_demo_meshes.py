#!/usr/bin/env python
"""Generate the demo elbow meshes (distal humerus, proximal ulna, two cartilage layers) as PLY.

Procedural and deterministic: see jointmodeller/io/mesh_demo.py for the geometry and docs/demo.md for
the model. Default output: assets/meshes/ (≤ 20k vertices each, committed). ``--high-res`` writes the
benchmark variant (humerus ≥ 50k, ulna ≥ 20k vertices) into the user cache (not committed) unless
``--out`` says otherwise.

    python scripts/make_demo_meshes.py                 # assets/meshes/demo_elbow_*.ply
    python scripts/make_demo_meshes.py --high-res      # ~/.cache/jointmodeller/meshes/*_highres_<tag>.ply
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jointmodeller.app.demo import cache_dir  # noqa: E402
from jointmodeller.io import mesh_demo  # noqa: E402
from jointmodeller.io.meshes import read_mesh  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--high-res", action="store_true", help="benchmark resolution (≥ 50k / ≥ 20k vertices)")
    ap.add_argument("--out", type=Path, default=None, help="output folder")
    args = ap.parse_args(argv)
    to_cache = args.out is None and args.high_res
    out = args.out or (cache_dir() if args.high_res else REPO / "assets" / "meshes")
    paths = mesh_demo.write_demo_meshes(out, high_res=args.high_res,
                                        tag=mesh_demo.geometry_tag() if to_cache else "")
    for path in paths.values():
        mesh = read_mesh(path, units="m")
        print(f"{path}: {mesh.n_vertices} vertices, {mesh.n_faces} faces"
              + (f"  warnings: {list(mesh.warnings)}" if mesh.warnings else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
