"""Regenerate tests/io/osim/data/arm26_reference.csv with OpenSim (the `opensim` package).

Run: python tests/io/osim/make_reference.py [path/to/arm26.osim]. Writes OpenSim's own path length and
moment arm about r_elbow_flex for each arm26 muscle, elbow flexion 0°–130° in 5° steps, shoulder at
its default — values only, not the model.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
DEFAULT_MODEL = HERE.parents[3] / "shared" / "models" / "arm26" / "arm26.osim"
ANGLES_DEG = np.arange(0, 131, 5)


def opensim_arm26_values(model_path: Path, angles_deg=ANGLES_DEG) -> list[tuple[float, str, float, float]]:
    """(angle_deg, muscle, length_m, moment_arm_m) rows computed by OpenSim."""
    import opensim as osim

    model = osim.Model(str(model_path))
    state = model.initSystem()
    elbow = model.getCoordinateSet().get("r_elbow_flex")
    muscles = model.getMuscles()
    rows = []
    for deg in angles_deg:
        elbow.setValue(state, float(np.radians(deg)))
        model.realizePosition(state)
        for i in range(muscles.getSize()):
            path = muscles.get(i).getGeometryPath()
            rows.append((float(deg), muscles.get(i).getName(), path.getLength(state),
                         path.computeMomentArm(state, elbow)))
    return rows


def main() -> None:
    model_path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL
    import opensim as osim

    rows = opensim_arm26_values(model_path)
    out = HERE / "data" / "arm26_reference.csv"
    with out.open("w", newline="") as fh:
        fh.write(f"# OpenSim {osim.__version__} on arm26.osim: path length and moment arm about r_elbow_flex\n")
        w = csv.writer(fh)
        w.writerow(["elbow_flex_deg", "muscle", "length_m", "moment_arm_m"])
        for deg, name, length, ma in rows:
            w.writerow([f"{deg:g}", name, f"{length:.9f}", f"{ma:.9f}"])
    print(f"wrote {len(rows)} rows to {out}")


if __name__ == "__main__":
    main()
