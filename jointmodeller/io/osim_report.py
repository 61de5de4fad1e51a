"""The import report: every OpenSim component that was not imported, or imported approximately,
with its type and the reason — nothing is dropped silently."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class ReportItem:
    """One component: its name (or path), OpenSim type, and why it is listed."""

    component: str
    type: str
    why: str


@dataclass(frozen=True)
class CoordinateInfo:
    """What OpenSim says about a coordinate that the project has no field for yet."""

    name: str
    joint: str
    default: float
    range_min: float
    range_max: float
    locked: bool = False
    clamped: bool = False
    motion_type: str = ""


@dataclass(frozen=True)
class PathWrapInfo:
    """One PathWrap of a path: wrap object, 1-based point range (-1 = path end), method."""

    wrap_object: str
    start: int = -1
    end: int = -1
    method: str = "hybrid"


@dataclass
class ImportReport:
    """Outcome of an OpenSim import.

    not_imported: components left out; approximated: imported with a stated approximation;
    coordinates: ranges, locks and clamping (no project field yet); path_wraps: attachment name ->
    its PathWraps with point ranges (the project keeps only the wrap object names); counts: what was
    imported, by kind.
    """

    model_path: str
    model_name: str = ""
    not_imported: list[ReportItem] = field(default_factory=list)
    approximated: list[ReportItem] = field(default_factory=list)
    coordinates: list[CoordinateInfo] = field(default_factory=list)
    path_wraps: dict[str, tuple[PathWrapInfo, ...]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def skip(self, component: str, type_: str, why: str) -> None:
        self.not_imported.append(ReportItem(component, type_, why))

    def approx(self, component: str, type_: str, why: str) -> None:
        self.approximated.append(ReportItem(component, type_, why))

    def to_text(self) -> str:
        """A readable summary (also stored in the project's notes)."""
        lines = [f"Imported from OpenSim model {self.model_name!r} ({self.model_path})"]
        if self.counts:
            lines.append("Imported: " + ", ".join(f"{v} {k}" for k, v in self.counts.items()))
        if self.coordinates:
            lines.append("Coordinates (default, range, flags):")
            for c in self.coordinates:
                flags = ", ".join(f for f, on in (("locked", c.locked), ("clamped", c.clamped)) if on)
                lines.append(f"  {c.name} ({c.joint}): default {c.default:g}, range [{c.range_min:g}, "
                             f"{c.range_max:g}]" + (f", {flags}" if flags else ""))
        if self.path_wraps:
            lines.append("Path wrap ranges (1-based path points, -1 = whole path):")
            for name, wraps in self.path_wraps.items():
                lines.append(f"  {name}: " + "; ".join(f"{w.wrap_object} [{w.start}, {w.end}] {w.method}"
                                                      for w in wraps))
        if self.approximated:
            lines.append("Imported approximately:")
            lines += [f"  {i.component} ({i.type}): {i.why}" for i in self.approximated]
        if self.not_imported:
            lines.append("Not imported:")
            lines += [f"  {i.component} ({i.type}): {i.why}" for i in self.not_imported]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-able form."""
        return {
            "model_path": self.model_path,
            "model_name": self.model_name,
            "counts": dict(self.counts),
            "not_imported": [asdict(i) for i in self.not_imported],
            "approximated": [asdict(i) for i in self.approximated],
            "coordinates": [asdict(c) for c in self.coordinates],
            "path_wraps": {k: [asdict(w) for w in v] for k, v in self.path_wraps.items()},
        }
