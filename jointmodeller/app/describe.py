"""A readable text summary of a project: the five input sections and what else it holds."""

from __future__ import annotations

from jointmodeller.model.specs import Project


def _v(vec, scale: float = 1.0, fmt: str = "{:.4g}") -> str:
    return "(" + ", ".join(fmt.format(x * scale) for x in vec) + ")"


def describe_project(project: Project, runs: list | None = None) -> str:
    """The five sections (Project, Springs, Masses, Attachments, Forces) and the feature lists."""
    info = project.info
    mm = 1000.0
    lines = [
        "== Project ==",
        f"title:       {info.title}",
        f"author:      {info.author or '-'}",
        f"description: {info.description or '-'}",
        f"units shown: {info.units_length}, {info.units_angle}",
        f"gravity:     {_v(info.gravity_G)} m/s²",
        f"created:     {info.created}   modified: {info.modified}",
        "",
        f"== Springs ({len(project.springs)}) ==",
    ]
    for sp in project.springs:
        damping = f" c={_v((sp.cx, sp.cy, sp.cz))} N·s/m" if (sp.cx or sp.cy or sp.cz) else ""
        slack = f" slack={sp.slack_length_m * mm:.2f} mm" if sp.slack_length_m else ""
        lines.append(f"- {sp.name}: {sp.model}, {sp.law}, kx={list(sp.kx)}"
                     f"{' tension-only' if sp.tension_only else ''}{slack}{damping}")
    lines += ["", f"== Masses ({len(project.masses)}) =="]
    for m in project.masses:
        mesh = f"{m.mesh.n_vertices} vertices" if m.mesh else "no mesh"
        cart = f", cartilage {m.cartilage.n_vertices} vertices" if m.cartilage else ""
        state = "fixed" if m.fixed else (f"{m.joint.type} joint to {m.joint.parent}" if m.joint else "free 6-DOF")
        lines.append(f"- {m.name}: {m.mass_kg * 1000:.1f} g, {mesh}{cart}, {state}; "
                     f"COM at {_v(m.position_G, mm, '{:.1f}')} mm, Euler {m.euler_sequence} {_v(m.euler_deg)}°")
    lines += ["", f"== Attachments ({len(project.attachments)}) =="]
    for a in project.attachments:
        rest = f"{a.initial_length_m * mm:.2f} mm" if a.initial_length_m else "from pose"
        lines.append(f"- {a.name}: {a.spring} from {a.body_a} {_v(a.point_a_L, mm, '{:.1f}')} mm to "
                     f"{a.body_b} {_v(a.point_b_L, mm, '{:.1f}')} mm, rest length {rest}"
                     f"{', wraps' if a.wraps else ''}")
    lines += ["", f"== Forces ({len(project.forces)}) =="]
    for f in project.forces:
        lines.append(f"- {f.name}: {f.magnitude_N:g} N on {f.body} at {_v(f.point_L, mm, '{:.1f}')} mm, "
                     f"direction {_v(f.direction_G)}, {f.profile.kind}")
    extras = [("Contact pairs", project.contacts), ("Constraints", project.constraints),
              ("Experiments", project.experiments), ("Wrap objects", project.wrap_objects)]
    for title, rows in extras:
        if rows:
            lines += ["", f"== {title} ({len(rows)}) =="] + [f"- {_row(r)}" for r in rows]
    if runs:
        lines += ["", f"== Stored runs ({len(runs)}) =="]
        lines += [f"- #{r.id} {r.study} {r.status} {r.created} {r.message}".rstrip() for r in runs]
    return "\n".join(lines)


def _row(row) -> str:
    name = getattr(row, "name", "?")
    if hasattr(row, "method"):
        return f"{name}: {row.body_a}–{row.body_b}, {row.method}, cartilage {row.cartilage_thickness_m * 1000:.1f} mm"
    if hasattr(row, "load_kind"):
        return (f"{name}: {row.load_kind} on {row.moving_body} vs {row.fixed_body}, up to {row.max_load:g} "
                f"at {row.lever_m * 100:.0f} cm, {row.steps} steps, flexion {row.flexion_deg:g}°")
    if hasattr(row, "kind"):
        return f"{name}: {row.kind}"
    return str(name)
