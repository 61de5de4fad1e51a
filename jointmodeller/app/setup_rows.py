"""Set-up rows from the command line: add, list and remove experiments and contact pairs.

The CLI (`jointmodeller experiment …`, `jointmodeller contact …`) calls these. Values arrive in the
units people type (millimetres, degrees, MPa) and are stored in SI; every row is validated with the
whole project before it is kept, and a problem is one line naming the row and field.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Iterable

from jointmodeller.model.errors import JointModellerError, ValidationError
from jointmodeller.model.specs import ContactPair, Experiment, Project, vec3
from jointmodeller.model.validation import validate_project

SECTIONS = {"experiment": "experiments", "contact": "contacts"}
AXIS_POINTS = ("origin_fixed", "origin_moving")
AXIS_DIRECTIONS = ("flexion_axis_fixed", "long_axis_fixed", "long_axis_moving")


def parse_vector(text: str, what: str) -> tuple[float, float, float]:
    """"x,y,z" (commas and/or spaces) -> three finite floats; one-line error naming ``what``."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise JointModellerError(f"{what} {text!r}: expected three numbers x,y,z")
    return vec3(values)


def parse_pairs(items: Iterable[str], what: str) -> list[tuple[str, str]]:
    """NAME=VALUE items -> [(name, value text)]; one-line error for an item without '='."""
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise JointModellerError(f"{what} {item!r}: expected NAME=VALUE")
        out.append((name.strip(), value.strip()))
    return out


def experiment_from_options(name: str, fixed: str, moving: str, *, load_kind: str = "varus_valgus",
                            max_load: float = 100.0, lever_mm: float | None = None, steps: int = 21,
                            sides: str = "both", unload: bool = False, flexion_deg: float = 30.0,
                            flexion_coordinate: str = "", flexion_sign: int = 1, measure: str | None = None,
                            load_point_mm: str | None = None, preload_force_n: str | None = None,
                            preload_moment_nm: str | None = None, tone: Iterable[str] = (),
                            axes: Iterable[str] = ()) -> Experiment:
    """An Experiment from command-line values: lever and load point in mm, axis origins in mm
    (directions unitless), preloads in N and N·m along the JCS axes, tone as NAME=N. The measure
    defaults to the load kind's own coordinate (deg for rotations, mm for translations)."""
    default_measure = {"varus_valgus": "varus_valgus_deg", "internal_external": "internal_external_deg",
                       "anterior_posterior": "anterior_posterior_mm", "compression": "distraction_mm"}
    if lever_mm is None:  # the lever is only meant for varus-valgus (a moment)
        lever_mm = 300.0 if load_kind == "varus_valgus" and load_point_mm is None else 0.0
    axis_rows = []
    for key, text in parse_pairs(axes, "--axis"):
        if key not in AXIS_POINTS + AXIS_DIRECTIONS:
            raise JointModellerError(f"--axis {key}: unknown; known: {', '.join(AXIS_POINTS + AXIS_DIRECTIONS)}")
        v = parse_vector(text, f"--axis {key}")
        axis_rows.append((key, vec3(x / 1000.0 for x in v) if key in AXIS_POINTS else v))
    tone_rows = []
    for tissue, text in parse_pairs(tone, "--tone"):
        try:
            tone_rows.append((tissue, float(text)))
        except ValueError:
            raise JointModellerError(f"--tone {tissue}={text}: the tension must be a number of newtons") from None
    return Experiment(
        name=name, fixed_body=fixed, moving_body=moving, load_kind=load_kind, max_load=float(max_load),
        lever_m=float(lever_mm) / 1000.0, steps=int(steps), unload=bool(unload), flexion_deg=float(flexion_deg),
        measure=measure or default_measure.get(load_kind, "varus_valgus_deg"), axes=tuple(axis_rows),
        flexion_coordinate=flexion_coordinate or "", flexion_sign=int(flexion_sign), sides=sides,
        load_point_L=None if load_point_mm is None else vec3(
            x / 1000.0 for x in parse_vector(load_point_mm, "--load-point-mm")),
        preload_force_N=(0.0, 0.0, 0.0) if preload_force_n is None else parse_vector(
            preload_force_n, "--preload-force-n"),
        preload_moment_Nm=(0.0, 0.0, 0.0) if preload_moment_nm is None else parse_vector(
            preload_moment_nm, "--preload-moment-nm"),
        tissue_tone=tuple(tone_rows),
    )


def contact_from_options(name: str, body_a: str, body_b: str, *, method: str = "elastic_foundation",
                         thickness_mm: float = 2.0, youngs_mpa: float = 10.0, poisson: float = 0.45,
                         design_load_n: float = 1000.0) -> ContactPair:
    """A ContactPair from command-line values: both cartilage layers' thickness in mm, E in MPa."""
    return ContactPair(name=name, body_a=body_a, body_b=body_b, method=method,  # type: ignore[arg-type]
                       cartilage_thickness_m=float(thickness_mm) / 1000.0, youngs_modulus_Pa=float(youngs_mpa) * 1e6,
                       poisson_ratio=float(poisson), design_load_N=float(design_load_n))


def _one_line(exc: ValidationError) -> JointModellerError:
    return JointModellerError("; ".join(str(p) for p in exc.problems))


def add_row(project: Project, kind: str, row, *, replace_existing: bool = False) -> Project:
    """The project with ``row`` added to the experiments or contacts (``kind`` "experiment" or
    "contact"), validated with the whole project. A row of the same name is refused unless
    ``replace_existing`` (then it is replaced in place)."""
    section = SECTIONS[kind]
    rows = list(getattr(project, section))
    names = [r.name for r in rows]
    if row.name in names:
        if not replace_existing:
            raise JointModellerError(f"{kind} {row.name!r} exists; give --replace to replace it")
        rows[names.index(row.name)] = row
    else:
        rows.append(row)
    new = project.with_rows(section, tuple(rows))
    try:
        validate_project(new)
    except ValidationError as exc:
        raise _one_line(exc) from None
    return new


def remove_row(project: Project, kind: str, name: str) -> Project:
    """The project without the experiment or contact pair called ``name`` (one-line error naming
    the choices when there is none)."""
    section = SECTIONS[kind]
    rows = getattr(project, section)
    if name not in [r.name for r in rows]:
        have = ", ".join(repr(r.name) for r in rows) or "none"
        raise JointModellerError(f"no {kind} named {name!r}; the project has: {have}")
    return project.with_rows(section, tuple(r for r in rows if r.name != name))


# ------------------------------------------------------------------------------------------------
# listing
# ------------------------------------------------------------------------------------------------
def experiment_line(e: Experiment) -> str:
    """One line: name, bodies, load and sweep, flexion, measure, and what else it applies."""
    unit = "N·m" if e.load_kind == "internal_external" else "N"
    sweep = {"both": "±", "positive": "+", "negative": "−"}.get(e.sides, "±")
    extras = []
    if e.load_point_L is not None:
        extras.append("load point " + ",".join(f"{v * 1000:g}" for v in e.load_point_L) + " mm")
    elif e.load_kind == "varus_valgus":
        extras.append(f"lever {e.lever_m * 1000:g} mm")
    if any(e.preload_force_N) or any(e.preload_moment_Nm):
        extras.append("preload")
    if e.tissue_tone:
        extras.append(f"tone on {len(e.tissue_tone)} tissue(s)")
    if e.measured:
        extras.append(f"{len(e.measured)} measured points")
    return (f"{e.name}: {e.moving_body} on {e.fixed_body}, {e.load_kind} {sweep}{e.max_load:g} {unit} in "
            f"{e.steps} steps at {e.flexion_deg:g}° flexion, measure {e.measure}"
            + (f" ({'; '.join(extras)})" if extras else ""))


def contact_line(c: ContactPair) -> str:
    return (f"{c.name}: {c.body_a} – {c.body_b}, {c.method}, cartilage {c.cartilage_thickness_m * 1000:g} mm, "
            f"E {c.youngs_modulus_Pa / 1e6:g} MPa, ν {c.poisson_ratio:g}")


def row_table(row) -> list[str]:
    """Every field of a row, one per line ("field  value"), for --verbose."""
    out = []
    for f in fields(row):
        value = getattr(row, f.name)
        if f.name == "measured":
            value = f"{len(value)} points"
        out.append(f"  {f.name:22s} {value}")
    return out


def with_default_axes_hint(project: Project, e: Experiment) -> str:
    """A note when the experiment's moving body has no joint and its axes lack what the JCS needs."""
    moving = next((m for m in project.masses if m.name == e.moving_body), None)
    if moving is None or moving.joint is not None:
        return ""
    missing = [k for k in ("flexion_axis_fixed", "long_axis_fixed") if k not in dict(e.axes)]
    if not missing:
        return ""
    return (f"note: {e.moving_body!r} has no joint; set " + " and ".join(f"--axis {k}=x,y,z" for k in missing)
            + " before a laxity run")


__all__ = ["add_row", "remove_row", "experiment_from_options", "contact_from_options", "experiment_line",
           "contact_line", "row_table", "parse_vector", "with_default_axes_hint"]
