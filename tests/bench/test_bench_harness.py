"""The benchmark harness: JSON shape, ratios, and failing groups reported without hiding others."""

import json
import sys
import types

from jointmodeller.bench import harness
from jointmodeller.bench.harness import Figure


def test_figures_have_value_baseline_and_ratio(monkeypatch):
    good = types.ModuleType("jointmodeller.bench.fake_good")
    good.run = lambda: [Figure("ms_x", 2.0, "ms", 10.0, "naive"),
                        Figure("rate", 300.0, "1/s", 100.0, "loop", lower_is_better=False)]
    bad = types.ModuleType("jointmodeller.bench.fake_bad")

    def boom():
        raise RuntimeError("broken group")
    bad.run = boom
    monkeypatch.setitem(sys.modules, "jointmodeller.bench.fake_good", good)
    monkeypatch.setitem(sys.modules, "jointmodeller.bench.fake_bad", bad)
    monkeypatch.setattr(harness, "group_names", lambda: ["fake_bad", "fake_good"])
    result = json.loads(harness.to_json(harness.run_groups(log=lambda m: None)))
    assert result["figures"]["fake_good.ms_x"] == {"value": 2.0, "unit": "ms", "baseline": 10.0,
                                                   "baseline_name": "naive", "ratio": 5.0}
    assert result["figures"]["fake_good.rate"]["ratio"] == 3.0
    assert "broken group" in result["errors"]["fake_bad"]
    assert "cpu_count" in result["machine"]


def test_unknown_group_is_an_error():
    result = harness.run_groups(["no_such_group"], log=lambda m: None)
    assert "no_such_group" in result["errors"] and not result["figures"]
