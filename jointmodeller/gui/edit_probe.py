"""Probe of the running GUI for `jointmodeller bench` (group gui, figure ``edit_redraw_ms``): the time
from a one-cell edit of the demo (a tissue type's stiffness) to the scene redrawn, with the scene
updated incrementally (only the actors the edit touched, :meth:`JointScene.update`) beside a full
rebuild of the scene for the same edit (``Viewport.incremental`` off), measured in turn in one
process. Run as ``python -m jointmodeller.gui.edit_probe``: prints one JSON line."""

from __future__ import annotations

import json
import time


def measure_edit_redraw(repeats: int = 9) -> dict:
    """Per mode (``incremental``, ``full``): the wall milliseconds of each edit, from the cell's text
    given to the document to the redrawn scene rendered (the main window coalesces the document's
    events and redraws once on the next event-loop turn), and of that the part spent in
    ``Viewport.show_project`` (``*_scene_ms``: the scene updated or built, and rendered); the modes
    alternate edit by edit, so both see the same load of a shared machine. Needs a display (or Xvfb)."""
    from jointmodeller.gui.probes import demo_window

    app, w = demo_window()
    vp = w.viewport
    redraws = [0]
    inside = [0.0]
    show = vp.show_project

    def counted(*args, **kwargs):
        t = time.perf_counter()
        show(*args, **kwargs)
        inside[0] = time.perf_counter() - t
        redraws[0] += 1

    vp.show_project = counted  # type: ignore[method-assign]  # count the window's redraws
    kx = w.doc.project.springs[0].kx
    times: dict[str, list[float]] = {"incremental": [], "full": []}
    scene_ms: dict[str, list[float]] = {"incremental": [], "full": []}
    for k in range(2 * repeats + 2):
        mode = "incremental" if k % 2 == 0 else "full"
        vp.incremental = mode == "incremental"
        scale = 1.0 + 0.25 * (k % 3 + 1)  # a new value every edit
        text = ", ".join(repr(float(c) * scale) for c in kx)
        n = redraws[0]
        t0 = time.perf_counter()
        changed = w.doc.set_cell("springs", 0, "kx", text)
        deadline = t0 + 60.0
        while changed and redraws[0] == n and time.perf_counter() < deadline:
            app.processEvents()
        took = time.perf_counter() - t0
        if k >= 2:  # the first edit of each mode warms up
            times[mode].append(1000.0 * took)
            scene_ms[mode].append(1000.0 * inside[0])
    vp.incremental = True
    actors = len(vp.plotter.renderer.actors)
    w.close()
    return {"incremental_ms": times["incremental"], "full_ms": times["full"],
            "incremental_scene_ms": scene_ms["incremental"], "full_scene_ms": scene_ms["full"], "actors": actors,
            "spring": w.doc.project.springs[0].name, "platform": app.platformName()}


if __name__ == "__main__":
    print(json.dumps(measure_edit_redraw()), flush=True)
