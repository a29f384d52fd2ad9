"""Files the commands read, shipped inside the wheel and found with `importlib.resources`.

* `crd/`: the JobSet CustomResourceDefinition `jobset dev` installs into a fresh simulated
  cluster (`jobset.controllers.crd.apply_crds`).
* `examples/`: the JobSet manifests with machine-checked outcomes that `jobset.dev` (the
  demo and `examplekit`) reads.

Each is a symlink into the source tree (`config/crd/bases`, `examples/`), so git holds one
copy of every file and an editable install reads the sources themselves; building the wheel
copies the targets in as plain files (`[tool.setuptools.package-data]` in pyproject.toml;
tests/integration/packaging checks an installed wheel). The webhook configurations are not
here: `jobset.webhooks.manifests` builds them in code, and `config/webhook/` is generated
from it.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["CRD_DIR", "EXAMPLES_DIR", "resource_dir"]


def resource_dir(name: str) -> Path:
    """The directory `name` of this package, on the file system.

    Commands hand these files to other programs (`kubectl apply -f`), so they need a real
    path; pip always unpacks a wheel onto the file system, and a zip import is refused here
    rather than later with a confusing error.
    """
    found = files(__name__) / name
    if not isinstance(found, Path):
        raise RuntimeError(f"jobset's package data must be on the file system, got {found!r}")
    # Resolved: in a checkout the entry is a symlink, and `kubectl apply -f DIR` does not
    # follow a symlink to a directory ("is a directory").
    return found.resolve()


CRD_DIR = resource_dir("crd")
EXAMPLES_DIR = resource_dir("examples")
