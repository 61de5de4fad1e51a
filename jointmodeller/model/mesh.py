"""Triangle-mesh data carried inside a project, so a project file is self-contained."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jointmodeller.model.errors import MeshError


@dataclass(frozen=True, eq=False)
class MeshData:
    """A triangle surface in a mass's local frame L, in metres.

    vertices_L: (n, 3) float64 [m];  faces: (m, 3) int64 vertex indices.
    ``source`` is the file it came from (informational); ``warnings`` what import noticed.
    """

    vertices_L: np.ndarray
    faces: np.ndarray
    source: str = ""
    warnings: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        v = np.ascontiguousarray(np.asarray(self.vertices_L, dtype=np.float64))
        f = np.ascontiguousarray(np.asarray(self.faces, dtype=np.int64))
        if v.ndim != 2 or v.shape[1] != 3 or len(v) < 3:
            raise MeshError(f"mesh {self.source!r}: vertices must be an (n>=3, 3) array, got {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3 or len(f) < 1:
            raise MeshError(f"mesh {self.source!r}: faces must be an (m>=1, 3) array, got {f.shape}")
        if not np.isfinite(v).all():
            raise MeshError(f"mesh {self.source!r}: vertices contain NaN or infinite values")
        if f.min() < 0 or f.max() >= len(v):
            raise MeshError(f"mesh {self.source!r}: a face refers to a vertex that does not exist")
        v.setflags(write=False)
        f.setflags(write=False)
        object.__setattr__(self, "vertices_L", v)
        object.__setattr__(self, "faces", f)
        object.__setattr__(self, "warnings", tuple(self.warnings))

    @property
    def n_vertices(self) -> int:
        return int(self.vertices_L.shape[0])

    @property
    def n_faces(self) -> int:
        return int(self.faces.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MeshData):
            return NotImplemented
        return (
            self.source == other.source
            and self.warnings == other.warnings
            and np.array_equal(self.vertices_L, other.vertices_L)
            and np.array_equal(self.faces, other.faces)
        )

    def __hash__(self) -> int:
        return hash((self.source, self.n_vertices, self.n_faces, self.vertices_L.tobytes()[:64]))

    def __repr__(self) -> str:
        return f"MeshData(source={self.source!r}, n_vertices={self.n_vertices}, n_faces={self.n_faces})"
