"""The scripted live study of the GUI benchmark, shared by the GUI tests: the second mass turns about z
while the study does numerical work between samples, reporting like a real dynamics run."""

from jointmodeller.gui.probes import turning_study

__all__ = ["turning_study"]
