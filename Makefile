# Set-up and the two jobs of README.md. Needs only python3 (>= 3.11) and a C compiler.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
VTA    := $(VENV)/bin/vta
OUT    := out

.PHONY: setup demo test docs clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@bash tools/system_deps.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,rtl,gpu,fpga,torch,docs,tune]'
	touch $@

demo: setup
	$(VTA) info
	$(VTA) compile examples/digits/digits_cnn.onnx -o $(OUT)/digits.vtamod
	$(VTA) run $(OUT)/digits.vtamod --eval examples/digits/heldout.npz --eval-scale 0.0625
	$(VTA) compile examples/digits/digits_cnn.onnx --target vta --input-shape image:120x1x8x8 \
		--calibrate examples/digits/calib.npz --calibrate-scale 0.0625 -o $(OUT)/digits_vta.vtamod
	$(VTA) run $(OUT)/digits_vta.vtamod --device tsim --eval examples/digits/heldout.npz --eval-scale 0.0625
	$(VTA) example gemm -o $(OUT)/gemm.vtaprog
	$(VTA) sim $(OUT)/gemm.vtaprog --check $(OUT)/gemm.expected.npz

# both cores (pytest-xdist), one test file per worker at a time: module-scoped fixtures build once
test: setup
	$(PY) -m pytest -m "not slow" -q -n 2 --dist loadfile

# the site from docs/, the docstrings and tutorials/ into docs/_build/html; a warning (a broken
# reference) fails it, as tests/test_docs_site.py does in CI
docs: setup
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

clean:
	rm -rf $(VENV) $(OUT) build sim_build .pytest_cache docs/_build docs/_tutorials
