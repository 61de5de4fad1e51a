"""The plots' panels and curves of a run, Qt-free (app.plot_data; gui.plots draws them)."""

from __future__ import annotations

import csv

import numpy as np

from jointmodeller.app.plot_data import Panel, axis_label, curves, panels, plot_columns, with_unit, write_plot_csv
from jointmodeller.model.results import RunRecord


def test_time_series_give_one_panel_each_in_plotted_units(tmp_path):
    t = np.linspace(0.0, 1.0, 5)
    contact = np.zeros((5, 1, 3))
    contact[:, 0, 2] = 3.0
    contact[:, 0, 0] = 4.0
    run = RunRecord("dynamics", series={"time": t, "tissue_force_N": np.outer(t, [1.0, 2.0]),
                                        "tissue_length_m": np.full((5, 2), 0.03), "contact_force_G": contact},
                    labels={"tissue_force_N": ["MCL", "LCL"], "contact_force_G": ["knee"]})
    shown = panels(run)
    assert [(p.kind, p.plotted) for p in shown] == [("time", "tissue_force_N"), ("time", "tissue_length_m"),
                                                   ("time", "contact_force_G")]
    x, y, names = curves(run, shown[1])
    assert np.array_equal(x, t) and np.allclose(y, 30.0) and names == []
    _, y, names = curves(run, shown[2])
    assert np.allclose(y, 5.0) and names == ["knee"]  # vectors plotted as their magnitudes
    header, columns = plot_columns(run, shown)
    assert header[:3] == ["time [s]", "tissue force [N] MCL", "tissue force [N] LCL"] and len(columns) == len(header)
    rows = list(csv.reader(open(write_plot_csv(tmp_path / "p.csv", run, shown), encoding="utf-8")))
    assert rows[0] == header and float(rows[-1][2]) == 2.0


def test_an_equilibrium_gives_bars_and_a_laxity_run_its_curve():
    eq = RunRecord("equilibrium", series={"time": np.zeros(1), "tissue_force_N": np.array([[4.0, 5.0]])})
    assert [p.kind for p in panels(eq)] == ["bars"]
    lax = RunRecord("laxity", parameters={"load_kind": "varus_valgus", "measure": "varus_valgus_deg"},
                    summary={"stiffness_unit": "N/deg"},
                    series={"load": np.array([0.0, 10.0]), "measure": np.array([0.0, 2.0]),
                            "tissue_tension_N": np.array([[0.0], [1.0]]), "measured_load": np.array([10.0]),
                            "measured_value": np.array([1.5])})
    shown = panels(lax)
    assert shown[0] == Panel("laxity", ("load", "measure"), "laxity", 1.0) and shown[0].title == "laxity curve"
    assert shown[1].kind == "sweep" and shown[1].plotted == "tissue_tension_N"
    assert axis_label(lax, "load") == "applied varus–valgus load [N]"
    assert axis_label(lax, "measure") == "varus valgus [°]" and with_unit("moment_arm_m") == "moment arm [m]"
    header, columns = plot_columns(lax, shown[:1])
    assert header == ["load", "measure", "measured_load", "measured_value"] and columns[3].tolist() == [1.5]
    assert panels(RunRecord("muscle_paths", series={"x": np.zeros(2)})) == []
