"""Developer tooling on the simulated cluster: `jobset sim`, `jobset dev`, the demo, examples.

* `commands`: the `jobset sim` and `jobset dev` processes; the only part of `jobset` that
  imports the simulator (`kubesim`, the `[sim]` extra), an import-linter contract;
* `examplekit`: the header format of the manifests in `examples/` (shipped as
  `jobset.data.EXAMPLES_DIR`), their expected outcomes, and checking them with kubectl;
* `demo`: `make demo` / `python -m jobset.dev.demo`, three examples under `jobset dev`.
"""
