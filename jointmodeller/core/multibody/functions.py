"""User-supplied scalar functions as data (seed 000 §3): value, first and second derivatives.

Functions drive custom mobilizers (θ1–3(q), p1–3(q)), coordinate couplers and prescribed motion.
Each is plain data (coefficients, spline knots) — never text to evaluate — and encodes into a flat
table ``(ftype, arg, offset, data)`` that the compiled kernels evaluate (``eval_function``).
Single-argument functions read coordinate ``arg`` of the mobilizer (or of the coupler's list).

A project's ``FunctionSpec`` (plain data in the model) becomes a Function once, by :func:`from_spec`;
everything that evaluates one — mobilizer kernels, couplers, prescribed motion, the muscle-path study's
coupled coordinates, the OpenSim importer — evaluates that Function (:meth:`Function.calc`, or
:func:`eval_spec` for a one-off value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np
from scipy.interpolate import CubicSpline

from jointmodeller.core._jit import njit
from jointmodeller.model.specs import FunctionSpec

F_CONSTANT, F_LINEAR, F_POLYNOMIAL, F_SPLINE = 0, 1, 2, 3


class Function:
    """Base: f(x) of one argument (``arg`` selects the coordinate) unless stated otherwise."""

    arg: int = 0

    def encode(self, scale: float = 1.0) -> tuple[int, int, np.ndarray]:
        """(ftype, arg, data) for the flat table; ``scale`` multiplies the values."""
        raise NotImplementedError

    @cached_property
    def _table(self) -> tuple[int, int, np.ndarray]:
        # encoded once (functions are constant data once built)
        return encode_for_table(self)

    def calc(self, x: np.ndarray | float, deriv: int = 0) -> np.ndarray:
        """Value (deriv=0), first or second derivative at x (vectorised over x)."""
        x = np.atleast_1d(np.asarray(x, float))
        return np.array([self.derivatives_at(float(xk))[deriv] for xk in x])

    def derivatives_at(self, x: float) -> tuple[float, float, float]:
        """(f, f', f'') at one x, from one evaluation of the table (a prescribed motion's rows need
        all three at every evaluation)."""
        ftype, arg, data = self._table
        q = np.zeros(max(arg + 1, 1))
        q[arg] = x
        u = np.zeros_like(q)
        u[arg] = 1.0
        g = np.zeros_like(q)
        v, uhu = eval_function(ftype, arg, 0, data, q, u, q.size, g)
        return float(v), float(g[arg]), float(uhu)

    def __call__(self, x):
        return self.calc(x, 0)


@dataclass
class Constant(Function):
    value: float

    def encode(self, scale=1.0):
        return F_CONSTANT, 0, np.array([self.value * scale], float)


@dataclass
class Linear(Function):
    """f(q) = offset + Σ coeffs[i]·q[i] over all of the owner's coordinates (multi-argument)."""

    coeffs: list[float] | np.ndarray
    offset: float = 0.0

    def encode(self, scale=1.0):
        c = np.asarray(self.coeffs, float).ravel()
        return F_LINEAR, 0, np.concatenate([[self.offset], c]) * scale


@dataclass
class Polynomial(Function):
    """f(x) = Σ coeffs[k]·x^k (ascending powers) of coordinate ``arg``."""

    coeffs: list[float] | np.ndarray
    arg: int = 0

    def encode(self, scale=1.0):
        return F_POLYNOMIAL, int(self.arg), np.asarray(self.coeffs, float).ravel() * scale


@dataclass
class Spline(Function):
    """Natural cubic spline through data points (x, y) of coordinate ``arg`` (C2, extrapolates
    with the end cubics)."""

    x: list[float] | np.ndarray
    y: list[float] | np.ndarray
    arg: int = 0
    bc_type: str = "natural"

    def encode(self, scale=1.0):
        x = np.asarray(self.x, float)
        y = np.asarray(self.y, float)
        if x.size < 2 or np.any(np.diff(x) <= 0):
            raise ValueError("spline x must be strictly increasing with at least two points")
        if x.size == 2:
            slope = (y[1] - y[0]) / (x[1] - x[0])
            coef = np.array([[y[0], slope, 0.0, 0.0]])
        else:
            cs = CubicSpline(x, y, bc_type=self.bc_type)
            # scipy: c[k, i] multiplies (x - x_i)^(3-k)
            coef = np.stack([cs.c[3], cs.c[2], cs.c[1], cs.c[0]], axis=1)
        nseg = coef.shape[0]
        data = np.concatenate([[float(nseg)], x, (coef * scale).ravel()])
        return F_SPLINE, int(self.arg), data


@dataclass
class PiecewiseLinear(Function):
    """Straight lines through the points (x, y) of coordinate ``arg``, continued beyond the end points
    with the end slopes (OpenSim's PiecewiseLinearFunction). Encoded as a spline whose segments are
    linear, so the kernels evaluate it with the spline arithmetic (values, slopes, zero curvature)."""

    x: list[float] | np.ndarray
    y: list[float] | np.ndarray
    arg: int = 0

    def encode(self, scale=1.0):
        x = np.asarray(self.x, float)
        y = np.asarray(self.y, float)
        if x.size < 2 or x.size != y.size or np.any(np.diff(x) <= 0):
            raise ValueError("piecewise linear x must be strictly increasing with at least two points, "
                             "as many as y")
        zero = np.zeros(x.size - 1)
        coef = np.stack([y[:-1], np.diff(y) / np.diff(x), zero, zero], axis=1)
        data = np.concatenate([[float(coef.shape[0])], x, (coef * scale).ravel()])
        return F_SPLINE, int(self.arg), data


@dataclass
class Multiplier(Function):
    """scale · function."""

    function: Function
    scale: float = 1.0
    arg: int = field(init=False, default=0)

    def __post_init__(self):
        self.arg = getattr(self.function, "arg", 0)

    def encode(self, scale=1.0):
        return self.function.encode(scale * self.scale)


def coordinates_read(fn: Function | None) -> set[int]:
    """The owner's coordinates a function depends on: none for a constant, the non-zero terms of a
    linear combination, its one argument otherwise."""
    if fn is None or isinstance(fn, Constant):
        return set()
    if isinstance(fn, Linear):
        return {int(i) for i in np.flatnonzero(np.asarray(fn.coeffs, float).ravel())}
    if isinstance(fn, Multiplier):
        return coordinates_read(fn.function) if fn.scale != 0.0 else set()
    return {int(fn.arg)}


@njit(inline="always")
def eval_function_1d(ftype, off, fdata, x, ux):
    """(f, ∂f/∂x, ∂²f/∂x² ux²) of an encoded function of the single coordinate x with speed ux (the
    arithmetic of every function of one argument; :func:`eval_function` uses it for polynomials and
    splines, the lean kernels for one-coordinate custom mobilizers and one-argument couplers)."""
    if ftype == 0:
        return fdata[off], 0.0, 0.0
    if ftype == 1:
        c = fdata[off + 1]
        return fdata[off] + c * x, c, 0.0
    if ftype == 2:
        n = int(fdata[off])
        v = 0.0
        d1 = 0.0
        d2 = 0.0
        for k in range(n - 1, -1, -1):
            c = fdata[off + 1 + k]
            d2 = d2 * x + 2.0 * d1
            d1 = d1 * x + v
            v = v * x + c
        return v, d1, d2 * ux * ux
    nseg = int(fdata[off])
    xs = off + 1
    cs = xs + nseg + 1
    lo = 0
    hi = nseg - 1
    if x >= fdata[xs + nseg - 1]:
        lo = nseg - 1
    elif x > fdata[xs]:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fdata[xs + mid] <= x:
                lo = mid
            else:
                hi = mid
        if fdata[xs + hi] <= x:
            lo = hi
    dx = x - fdata[xs + lo]
    a = fdata[cs + 4 * lo]
    b = fdata[cs + 4 * lo + 1]
    c = fdata[cs + 4 * lo + 2]
    d = fdata[cs + 4 * lo + 3]
    v = a + dx * (b + dx * (c + dx * d))
    d1 = b + dx * (2.0 * c + 3.0 * d * dx)
    d2 = 2.0 * c + 6.0 * d * dx
    return v, d1, d2 * ux * ux


@njit
def eval_function(ftype, arg, off, fdata, q, u, m, grad):
    """Evaluate an encoded function of coordinates q (m,).

    Writes ∂f/∂q into grad[:m] and returns (f, Σ ∂²f/∂qi∂qj ui uj) — the Hessian quadratic form
    along the speeds u that the hinge-matrix derivative needs (seed 000 eqs. 30, 35).
    """
    for k in range(m):
        grad[k] = 0.0
    if ftype == 0:
        return fdata[off], 0.0
    if ftype == 1:
        v = fdata[off]
        for k in range(m):
            c = fdata[off + 1 + k]
            v += c * q[k]
            grad[k] = c
        return v, 0.0
    v, d1, uhu = eval_function_1d(ftype, off, fdata, q[arg], u[arg])  # polynomial or spline of q[arg]
    grad[arg] = d1
    return v, uhu


def encode_for_table(fn: Function, scale: float = 1.0) -> tuple[int, int, np.ndarray]:
    """Table form; polynomials get their length prepended so the kernel can read them."""
    ftype, arg, data = fn.encode(scale)
    if ftype == F_POLYNOMIAL:
        data = np.concatenate([[float(data.size)], data])
    return ftype, arg, data


class FunctionTable:
    """Accumulates encoded functions into flat arrays (ftype, farg, foff, fdata)."""

    def __init__(self):
        self.ftype: list[int] = []
        self.farg: list[int] = []
        self.foff: list[int] = []
        self.chunks: list[np.ndarray] = []
        self.size = 0

    def add(self, fn: Function | None, scale: float = 1.0) -> int:
        """Index of the added function, or -1 for None (identically zero)."""
        if fn is None:
            return -1
        ftype, arg, data = encode_for_table(fn, scale)
        self.ftype.append(ftype)
        self.farg.append(arg)
        self.foff.append(self.size)
        self.chunks.append(data)
        self.size += data.size
        return len(self.ftype) - 1

    def arrays(self):
        fdata = np.concatenate(self.chunks) if self.chunks else np.zeros(1)
        return (
            np.array(self.ftype or [0], np.int64),
            np.array(self.farg or [0], np.int64),
            np.array(self.foff or [0], np.int64),
            fdata.astype(float),
        )


def from_spec(fn: FunctionSpec, coordinates: Sequence[str] = ("x",)) -> Function:
    """The backend Function of a project's FunctionSpec whose owner has ``coordinates`` (a custom
    mobilizer's coordinate names; ("x",) for a function of one argument such as a coupler's
    independent coordinate or time). The spec's first named coordinate selects the argument (a
    linear spec becomes a Linear over all the owner's coordinates with one nonzero coefficient).

    A spec that names no coordinate is the constant it takes at 0 (the importer's rule for an OpenSim
    function without coordinates). Every kind of FunctionSpec is supported; ValueError otherwise.
    """
    if not fn.coordinates:
        if fn.kind == "constant":
            return Constant(float(fn.values[0]))
        return Constant(float(from_spec(FunctionSpec(fn.kind, fn.values, fn.x, ("x",))).calc(0.0)[0]))
    coordinates = tuple(coordinates)
    if fn.coordinates[0] not in coordinates:
        raise ValueError(f"function of {fn.coordinates[0]!r}, which is not one of {list(coordinates)}")
    arg = coordinates.index(fn.coordinates[0])
    if fn.kind == "constant":
        return Constant(float(fn.values[0]))
    if fn.kind == "linear":
        c = np.zeros(len(coordinates))
        c[arg] = fn.values[0]
        return Linear(c, float(fn.values[1]))
    if fn.kind == "polynomial":
        return Polynomial(list(fn.values), arg)
    if fn.kind == "spline":
        return Spline(list(fn.x), list(fn.values), arg)
    if fn.kind == "piecewise_linear":
        return PiecewiseLinear(list(fn.x), list(fn.values), arg)
    raise ValueError(f"function kind {fn.kind!r} is not supported")


def eval_spec(fn: FunctionSpec, x: np.ndarray | float, deriv: int = 0) -> np.ndarray:
    """Value (deriv=0), first or second derivative (vectorised over x) of a FunctionSpec as a
    function of its (first) coordinate; for repeated evaluation keep ``from_spec``'s Function."""
    return from_spec(fn, fn.coordinates[:1]).calc(x, deriv)
