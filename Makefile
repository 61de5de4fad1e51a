# The README's two commands: `make demo` (set up, run the demo) and `make test` (set up, pass the tests).
.PHONY: demo test test-generic bench clean

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# The numerical tests with numba built for a generic CPU and numpy's/OpenBLAS's wider SIMD paths off.
test-generic:
	scripts/test_generic_cpu.sh

bench:
	scripts/setup.sh && .venv/bin/jointmodeller bench --json

clean:
	rm -rf .venv build *.egg-info .pytest_cache test-artifacts
