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
    Constant, Linear, Multiplier, Polynomial, Spline, function_from_spec,
)


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
        from jointmodeller.core.multibody.integrate import simulate_compiled
        s = random_chain(5, seed=9, types=("pin", "custom", "ellipsoid", "ball_quaternion", "screw"))
        st = s.default_state(); st.q = s.normalize(st.q + 0.3); st.u[:] = 0.5
        k = knee_custom(); sk = k.default_state(); sk.q[:] = -1.0
        tr = simulate_compiled(k, sk, 0.2, 1e-6)
        p = knee_planar_coupled(); tp = simulate_compiled(p, knee_planar_state(p, -1.0), 0.2, 1e-6)
        np.save(sys.stdout.buffer, np.concatenate([s.forward_dynamics(st), s.mass_matrix(st.q).ravel(),
                                                   tr.q[-1], tp.q[-1]]))
        """
    )
    env = dict(os.environ, JOINTMODELLER_NUMBA="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True, timeout=120)
    import io

    fallback = np.load(io.BytesIO(out.stdout))
    from jointmodeller.core.multibody.examples import knee_custom
    from jointmodeller.core.multibody.integrate import simulate_compiled

    s = random_chain(5, seed=9, types=("pin", "custom", "ellipsoid", "ball_quaternion", "screw"))
    st = s.default_state()
    st.q = s.normalize(st.q + 0.3)
    st.u[:] = 0.5
    k = knee_custom()
    sk = k.default_state()
    sk.q[:] = -1.0
    tr = simulate_compiled(k, sk, 0.2, 1e-6)
    from jointmodeller.core.multibody.examples import knee_planar_coupled, knee_planar_state

    p = knee_planar_coupled()
    tp = simulate_compiled(p, knee_planar_state(p, -1.0), 0.2, 1e-6)
    ref = np.concatenate([s.forward_dynamics(st), s.mass_matrix(st.q).ravel(), tr.q[-1], tp.q[-1]])
    np.testing.assert_allclose(fallback, ref, atol=1e-10)


def test_function_from_plain_data():
    f = function_from_spec({"kind": "multiplier", "scale": 2.0,
                            "function": {"kind": "spline", "x": [0, 1, 2], "y": [0, 1, 0]}})
    np.testing.assert_allclose(f([0.0, 1.0, 2.0]), [0, 2, 0], atol=1e-14)
    assert function_from_spec({"kind": "constant", "value": 3})(0.5)[0] == 3.0
    with pytest.raises(ValueError):
        function_from_spec({"kind": "eval", "text": "__import__('os')"})
