"""JointModeller: a desktop joint modeller for orthopaedic research (MJM-style engine, mobilizer backend)."""

__version__ = "0.1.0"
