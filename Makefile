# The README's two commands: `make demo` (set up, run the demo) and `make test` (set up, pass the tests).
.PHONY: demo test test-fast lint typecheck test-generic bench clean

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# ruff and the import-linter contracts (scripts/lint.sh)
lint:
	scripts/setup.sh test && scripts/lint.sh

# mypy on model, core, app and persistence (scripts/typecheck.sh)
typecheck:
	scripts/setup.sh test && scripts/typecheck.sh

# The tests without the slow and the GUI ones (markers in pyproject.toml), no lint, no wheel check,
# spread over the machine's cores (pytest-xdist; tests are independent and write only to tmp_path),
# with Python's bytecode and pytest's rewritten test modules cached in __pycache__ as a checkout
# normally does (an environment that sets PYTHONDONTWRITEBYTECODE recompiles all of them every run).
test-fast:
	scripts/setup.sh test && env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q -m "not slow and not gui" -n auto

# The numerical tests with numba built for a generic CPU and numpy's/OpenBLAS's wider SIMD paths off.
test-generic:
	scripts/test_generic_cpu.sh

bench:
	scripts/setup.sh && .venv/bin/jointmodeller bench --json

clean:
	rm -rf .venv build *.egg-info .pytest_cache .mypy_cache .ruff_cache test-artifacts
