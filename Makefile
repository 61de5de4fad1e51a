# The README's two commands: `make demo` (set up, run the demo) and `make test` (set up, pass the tests).
.PHONY: demo test bench clean

demo:
	scripts/demo.sh

test:
	scripts/test.sh

bench:
	scripts/setup.sh && .venv/bin/jointmodeller bench --json

clean:
	rm -rf .venv build *.egg-info .pytest_cache test-artifacts
