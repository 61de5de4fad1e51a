"""Results of a study run: its parameters and named time series, stored beside the inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np


@dataclass(eq=False)
class RunRecord:
    """One run of a study.

    study:      "equilibrium", "dynamics", "laxity", "moment_arms", ...
    parameters: JSON-able dict of what the run was asked to do (accuracy, end time, ...).
    status:     "completed", "stopped" (by the user), "failed" (message says why; series hold what
                was computed until then).
    series:     name -> numpy array whose first axis is the sample index (e.g. "time" (k,),
                "body_p_G" (k, n_bodies, 3), "tissue_force_N" (k, n_tissues)).
    labels:     name -> list of column labels for the trailing axis (e.g. body or tissue names).
    summary:    JSON-able dict of scalar results (residuals, laxity, fit metrics).
    """

    study: str
    parameters: dict = field(default_factory=dict)
    status: str = "completed"
    message: str = ""
    series: dict[str, np.ndarray] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    id: int | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRecord):
            return NotImplemented
        return (
            (self.study, self.parameters, self.status, self.message, self.labels, self.summary, self.created)
            == (other.study, other.parameters, other.status, other.message, other.labels, other.summary, other.created)
            and self.series.keys() == other.series.keys()
            and all(np.array_equal(self.series[k], other.series[k]) for k in self.series)
        )
