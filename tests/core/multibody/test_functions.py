"""Mobilizer/coupler functions: values and derivatives against their definitions and finite
differences; the plain-Python fallback gives the compiled results."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from jointmodeller.core.multibody.functions import (
    Constant,
    Linear,
    Multiplier,
    PiecewiseLinear,
    Polynomial,
    Spline,
    eval_function,
    eval_spec,
    from_spec,
)
from jointmodeller.model.specs import FunctionSpec


def test_spline_matches_scipy_and_derivatives():
    x = np.array([-2.0, -1.0, 0.0, 0.4, 1.5, 2.0])
    y = np.array([0.1, -0.3, 0.2, 0.25, -0.1, 0.0])
    s = Spline(x, y)
    cs = CubicSpline(x, y, bc_type="natural")
    xs = np.linspace(-2.5, 2.5, 41)
    for d in range(3):
        np.testing.assert_allclose(s.calc(xs, d), cs(xs, d), atol=1e-12)
    np.testing.assert_allclose(s(x), y, atol=1e-14)


def test_polynomial_linear_constant_multiplier():
    p = Polynomial([1.0, -2.0, 0.5, 0.25])
    x = np.linspace(-1, 2, 7)
    np.testing.assert_allclose(p(x), 1 - 2 * x + 0.5 * x**2 + 0.25 * x**3)
    np.testing.assert_allclose(p.calc(x, 1), -2 + x + 0.75 * x**2)
    np.testing.assert_allclose(p.calc(x, 2), 1 + 1.5 * x)
    np.testing.assert_allclose(Multiplier(p, -3.0).calc(x, 2), -3 * (1 + 1.5 * x))
    np.testing.assert_allclose(Constant(2.5)(x), 2.5)
    np.testing.assert_allclose(Linear([2.0], 0.5)(x), 0.5 + 2 * x)
    h = 1e-6
    sp = Spline([0, 1, 2, 3], [0, 1, 0, 2])
    np.testing.assert_allclose(sp.calc(1.3, 1), (sp(1.3 + h) - sp(1.3 - h)) / (2 * h), atol=1e-8)


@pytest.mark.slow
def test_plain_python_fallback_gives_the_compiled_results():
    """Run the kernels with numba switched off (JOINTMODELLER_NUMBA=0) and compare."""
    from jointmodeller.core.multibody.examples import random_chain

    code = textwrap.dedent(
        """
        import numpy as np, sys
        from jointmodeller.core._jit import NUMBA_ENABLED
        assert not NUMBA_ENABLED
        from jointmodeller.core.multibody.examples import (
            random_chain, knee_custom, knee_planar_coupled, knee_planar_state)
        from jointmodeller.core.multibody.integrate import simulate
        s = random_chain(5, seed=9, types=("pin", "custom", "ellipsoid", "ball_quaternion", "screw"))
        st = s.default_state(); st.q = s.normalize(st.q + 0.3); st.u[:] = 0.5
        k = knee_custom(); sk = k.default_state(); sk.q[:] = -1.0
        tr = simulate(k, sk, 0.2, 1e-6, [0.2], compiled=True)
        p = knee_planar_coupled(); tp = simulate(p, knee_planar_state(p, -1.0), 0.2, 1e-6, [0.2], compiled=True)
        np.save(sys.stdout.buffer, np.concatenate([s.forward_dynamics(st), s.mass_matrix(st.q).ravel(),
                                                   tr.q[-1], tp.q[-1]]))
        """
    )
    env = dict(os.environ, JOINTMODELLER_NUMBA="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True, timeout=120)
    import io

    fallback = np.load(io.BytesIO(out.stdout))
    from jointmodeller.core.multibody.examples import knee_custom
    from jointmodeller.core.multibody.integrate import simulate

    s = random_chain(5, seed=9, types=("pin", "custom", "ellipsoid", "ball_quaternion", "screw"))
    st = s.default_state()
    st.q = s.normalize(st.q + 0.3)
    st.u[:] = 0.5
    k = knee_custom()
    sk = k.default_state()
    sk.q[:] = -1.0
    tr = simulate(k, sk, 0.2, 1e-6, [0.2], compiled=True)
    from jointmodeller.core.multibody.examples import knee_planar_coupled, knee_planar_state

    p = knee_planar_coupled()
    tp = simulate(p, knee_planar_state(p, -1.0), 0.2, 1e-6, [0.2], compiled=True)
    ref = np.concatenate([s.forward_dynamics(st), s.mass_matrix(st.q).ravel(), tr.q[-1], tp.q[-1]])
    np.testing.assert_allclose(fallback, ref, atol=1e-10)


def test_every_function_spec_kind_converts_once_and_evaluates_with_derivatives():
    """One conversion (from_spec) for every FunctionSpec kind, against each kind's definition."""
    xs = np.linspace(-1.5, 3.5, 23)  # inside and beyond the knots
    kx, ky = (0.0, 0.5, 1.0, 2.0), (0.2, -0.1, 0.4, 0.3)
    cs = CubicSpline(kx, ky, bc_type="natural")
    slope = np.diff(ky) / np.diff(kx)
    seg = np.clip(np.searchsorted(kx, xs, side="right") - 1, 0, len(kx) - 2)
    cases = {
        FunctionSpec("constant", (2.5,), (), ("a",)): (np.full_like(xs, 2.5), 0 * xs, 0 * xs),
        FunctionSpec("linear", (2.0, 0.5), (), ("a",)): (0.5 + 2 * xs, 2 + 0 * xs, 0 * xs),
        FunctionSpec("polynomial", (1.0, -2.0, 0.5), (), ("a",)): (1 - 2 * xs + 0.5 * xs**2, -2 + xs, 1 + 0 * xs),
        FunctionSpec("spline", ky, kx, ("a",)): (cs(xs), cs(xs, 1), cs(xs, 2)),
        # straight between the points, the end slopes beyond them (OpenSim's PiecewiseLinearFunction)
        FunctionSpec("piecewise_linear", ky, kx, ("a",)): (
            np.asarray(ky)[seg] + (xs - np.asarray(kx)[seg]) * slope[seg], slope[seg], 0 * xs),
    }
    for spec, ref in cases.items():
        fn = from_spec(spec, ("a",))
        for d in range(3):
            np.testing.assert_allclose(fn.calc(xs, d), ref[d], atol=1e-12, err_msg=f"{spec.kind} d{d}")
            np.testing.assert_allclose(eval_spec(spec, xs, d), ref[d], atol=1e-12)
    pl = from_spec(FunctionSpec("piecewise_linear", ky, kx, ("a",)), ("a",))
    assert isinstance(pl, PiecewiseLinear)
    np.testing.assert_allclose(pl.calc(np.array(kx)), ky, atol=1e-15)
    np.testing.assert_allclose(pl.calc(xs[(xs > 0) & (xs < 2)]), np.interp(xs[(xs > 0) & (xs < 2)], kx, ky), atol=1e-15)


def test_function_spec_of_one_of_several_coordinates_and_without_a_coordinate():
    # a custom mobilizer's function of its second coordinate: a multi-argument Linear, or arg = 1
    lin = from_spec(FunctionSpec("linear", (3.0, 1.0), (), ("b",)), ("a", "b", "c"))
    q, u, g = np.array([0.7, 0.2, -0.4]), np.array([1.0, -2.0, 0.5]), np.zeros(3)
    ftype, arg, data = lin._table
    v, uhu = eval_function(ftype, arg, 0, data, q, u, 3, g)
    assert v == pytest.approx(1.0 + 3.0 * 0.2) and uhu == 0.0
    np.testing.assert_allclose(g, [0.0, 3.0, 0.0])
    sp = from_spec(FunctionSpec("spline", (0.0, 1.0, 0.0), (0.0, 1.0, 2.0), ("c",)), ("a", "b", "c"))
    assert sp.arg == 2
    # no coordinate named: the constant it takes at 0 (the importer's rule)
    assert from_spec(FunctionSpec("linear", (3.0, 1.0), (), ())).calc(5.0)[0] == 1.0
    assert from_spec(FunctionSpec("constant", (4.0,), (), ())).calc(5.0)[0] == 4.0
    with pytest.raises(ValueError):
        from_spec(FunctionSpec("linear", (3.0, 1.0), (), ("z",)), ("a", "b"))
    with pytest.raises(ValueError):  # functions are data, never text to evaluate
        from_spec(FunctionSpec("eval", ("__import__('os')",), (), ("a",)), ("a",))


def test_muscle_paths_keeps_exporting_backend_function():
    from jointmodeller.core.studies.muscle_paths import backend_function

    assert backend_function is from_spec
