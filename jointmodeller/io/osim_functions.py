"""OpenSim function elements (Constant, LinearFunction, PolynomialFunction, SimmSpline,
NaturalCubicSpline, PiecewiseLinearFunction, GCVSpline, MultiplierFunction) as FunctionSpec data.

SimmSpline is the Forsythe–Malcolm–Moler cubic spline (end third derivatives from divided
differences), which the project's "spline" kind (natural cubic) cannot express exactly; it is
resampled densely — original knots kept, OpenSim's linear extrapolation included over half the
span either side, knots clustered where the cubic meets the linear extrapolation — into a natural
spline (deviation ~1e-10 of the values' scale), and the largest deviation is reported.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
from scipy.interpolate import CubicSpline

from jointmodeller.io.osim_xml import Doc
from jointmodeller.model.specs import FunctionSpec

FUNCTION_TAGS = ("Constant", "LinearFunction", "PolynomialFunction", "SimmSpline", "NaturalCubicSpline",
                 "PiecewiseLinearFunction", "GCVSpline", "MultiplierFunction", "PiecewiseConstantFunction")
RESAMPLE_POINTS = 401


class UnsupportedFunction(ValueError):
    """A function type the project cannot represent; the message says which."""


def fmm_second_derivatives(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Second derivatives (n,) at the knots of the Forsythe–Malcolm–Moler spline (OpenSim's
    SimmSpline): natural-spline interior equations, end third derivatives from the cubic through
    the first / last four points (a parabola for three points, a line for two)."""
    n = len(x)
    if n == 2:
        return np.zeros(2)
    h = np.diff(x)
    d = np.diff(y) / h
    A = np.zeros((n, n))
    rhs = np.zeros(n)
    for i in range(1, n - 1):
        A[i, i - 1], A[i, i], A[i, i + 1] = h[i - 1], 2 * (h[i - 1] + h[i]), h[i]
        rhs[i] = 6 * (d[i] - d[i - 1])

    def third_dd(xs, ys):
        d1 = np.diff(ys) / np.diff(xs)
        d2 = np.diff(d1) / (xs[2:] - xs[:-2])
        return (d2[1] - d2[0]) / (xs[3] - xs[0])

    A[0, 0], A[0, 1] = -1.0, 1.0
    A[-1, -2], A[-1, -1] = -1.0, 1.0
    if n > 3:
        rhs[0] = 6 * h[0] * third_dd(x[:4], y[:4])
        rhs[-1] = 6 * h[-1] * third_dd(x[-4:], y[-4:])
    return np.linalg.solve(A, rhs)


def fmm_spline(x, y, xq) -> np.ndarray:
    """OpenSim SimmSpline values at xq: the FMM cubic inside [x0, xn], linear beyond (end slopes)."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    xq = np.asarray(xq, float)
    M = fmm_second_derivatives(x, y)
    h = np.diff(x)
    k = np.clip(np.searchsorted(x, xq, side="right") - 1, 0, len(x) - 2)
    t = xq - x[k]
    hk = h[k]
    b = (y[k + 1] - y[k]) / hk - hk * (2 * M[k] + M[k + 1]) / 6
    val = y[k] + t * (b + t * (M[k] / 2 + t * (M[k + 1] - M[k]) / (6 * hk)))
    b0 = (y[1] - y[0]) / h[0] - h[0] * (2 * M[0] + M[1]) / 6
    bn = (y[-1] - y[-2]) / h[-1] + h[-1] * (M[-2] + 2 * M[-1]) / 6
    val = np.where(xq < x[0], y[0] + (xq - x[0]) * b0, val)
    return np.where(xq > x[-1], y[-1] + (xq - x[-1]) * bn, val)


def _resample(x: np.ndarray, y: np.ndarray, fn) -> tuple[FunctionSpec, float]:
    span = x[-1] - x[0]
    grid = np.union1d(np.linspace(x[0] - 0.5 * span, x[-1] + 0.5 * span, RESAMPLE_POINTS), x)
    # the second derivative jumps where the spline meets its linear extrapolation: cluster knots
    # there (geometrically) so the natural spline's error dies out within a few microns of x0, xn
    off = (span / RESAMPLE_POINTS) * 0.5 ** np.arange(1, 14)
    grid = np.union1d(grid, np.concatenate([x[0] + off, x[0] - off, x[-1] + off, x[-1] - off]))
    # a grid point a rounding error away from a knot (linspace's -1.0472000000000001 beside the knot
    # -1.0472) would make an interval of 1e-16 and a spline with a slope spike there: keep the knot only
    near = np.abs(grid[:, None] - x[None, :]).min(axis=1)
    grid = np.union1d(grid[near > 1e-9 * span], x)
    vals = fn(grid)
    natural = CubicSpline(grid, vals, bc_type="natural")
    check = np.linspace(grid[0], grid[-1], 8 * RESAMPLE_POINTS)
    dev = float(np.max(np.abs(natural(check) - fn(check))))
    return FunctionSpec("spline", tuple(vals.tolist()), tuple(grid.tolist())), dev


def parse_function(doc: Doc, el: ET.Element, coordinate: str, scale: float = 1.0,
                   notes: list[str] | None = None) -> FunctionSpec:
    """FunctionSpec of the OpenSim function element ``el`` of ``coordinate``, values times
    ``scale``. Approximations are appended to ``notes``; UnsupportedFunction when impossible."""
    notes = notes if notes is not None else []
    coords = (coordinate,) if coordinate else ()
    tag = el.tag
    if tag == "Constant":
        return FunctionSpec("constant", (doc.float(el, "value", 0.0) * scale,), (), coords)
    if tag == "LinearFunction":
        c = doc.floats(el, "coefficients", 2, (1.0, 0.0))
        return FunctionSpec("linear", (c[0] * scale, c[1] * scale), (), coords)
    if tag == "PolynomialFunction":
        c = doc.floats(el, "coefficients", None, (0.0,))
        return FunctionSpec("polynomial", tuple(v * scale for v in reversed(c)), (), coords)
    if tag == "MultiplierFunction":
        k = doc.float(el, "scale", 1.0)
        holder = el.find("function")
        inner = None
        if holder is not None:
            inner = next(iter(holder), None)
        else:
            inner = next((c for c in el if c.tag in FUNCTION_TAGS), None)
        if inner is None:
            raise UnsupportedFunction(f"{doc.where(el)}: MultiplierFunction without a function")
        return parse_function(doc, inner, coordinate, scale * k, notes)
    if tag in ("SimmSpline", "NaturalCubicSpline", "PiecewiseLinearFunction", "GCVSpline",
               "PiecewiseConstantFunction"):
        x = np.asarray(doc.floats(el, "x"), float)
        y = np.asarray(doc.floats(el, "y"), float) * scale
        if len(x) != len(y) or len(x) < 1:
            raise doc.error(el, f"<{tag}> needs as many x as y values")
        if len(x) == 1:
            return FunctionSpec("constant", (float(y[0]),), (), coords)
        if np.any(np.diff(x) <= 0):
            raise doc.error(el, f"<{tag}> x values must increase")
        if tag == "PiecewiseLinearFunction":
            return FunctionSpec("piecewise_linear", tuple(y.tolist()), tuple(x.tolist()), coords)
        if tag == "PiecewiseConstantFunction":
            raise UnsupportedFunction(f"{doc.where(el)}: PiecewiseConstantFunction (steps) has no smooth "
                                      "equivalent")
        if tag == "NaturalCubicSpline":
            return FunctionSpec("spline", tuple(y.tolist()), tuple(x.tolist()), coords)
        if tag == "GCVSpline":
            notes.append(f"{doc.where(el)}: GCVSpline imported as a natural cubic spline through its knots")
            return FunctionSpec("spline", tuple(y.tolist()), tuple(x.tolist()), coords)
        if len(x) == 2:
            return FunctionSpec("linear", (float((y[1] - y[0]) / (x[1] - x[0])),
                                           float(y[0] - x[0] * (y[1] - y[0]) / (x[1] - x[0]))), (), coords)
        spec, dev = _resample(x, y, lambda q: fmm_spline(x, y, q))
        spec = FunctionSpec(spec.kind, spec.values, spec.x, coords)
        notes.append(f"{doc.where(el)}: SimmSpline resampled to a natural cubic spline with {len(spec.x)} "
                     f"knots (largest deviation {dev:.2e})")
        return spec
    raise UnsupportedFunction(f"{doc.where(el)}: function type {tag} is not supported")


def find_function(el: ET.Element) -> ET.Element | None:
    """The function child of a TransformAxis / coupler: a known function tag, or any child named
    'function' / 'coupled_coordinates_function' holding one."""
    for child in el:
        if child.tag in FUNCTION_TAGS:
            return child
    for holder_tag in ("function", "coupled_coordinates_function"):
        holder = el.find(holder_tag)
        if holder is not None:
            for child in holder:
                return child
    for child in el:
        if child.get("name") in ("function", "coupled_coordinates_function") and len(child.findall("*")):
            return child
    return None
