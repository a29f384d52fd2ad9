"""What the container image relies on, short of building it (no Docker engine here).

The Dockerfile installs the project without extras and runs the `jobset` console script
with the Deployment's arguments. Here: the console script exists and points at
`jobset.cli:main`, and the controller runs from it with exactly the Deployment's command
line (ports moved to free ones, plus a kubeconfig since there is no in-cluster config),
outside the source tree, with every test and benchmark dependency made unimportable, against
a cluster where config/install was applied. It becomes ready, serves metrics, and stops
cleanly on SIGTERM, as the kubelet would stop it.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

from kubesim.process import start_sim
from tests.integration.deploy.helpers import (
    CONFIG,
    REPO,
    eventually,
    free_port,
    http_get,
    scrape_install,
)

pytestmark = [pytest.mark.kubectl, pytest.mark.helm]


def _dev_only_modules() -> set[str]:
    """Top-level modules of the test and bench extras (not needed at runtime)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    dists = {
        re.split(r"[<>=!\[; ]", req, maxsplit=1)[0].lower()
        for reqs in extras.values()
        for req in reqs
    }
    runtime = {
        re.split(r"[<>=!\[; ]", req, maxsplit=1)[0].lower()
        for req in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    modules: set[str] = set()
    for module, owners in importlib.metadata.packages_distributions().items():
        if {o.lower() for o in owners} & (dists - runtime):
            modules.add(module)
    return modules


def test_console_script_is_the_cli() -> None:
    (script,) = [
        e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "jobset"
    ]
    assert script.value == "jobset.cli:main"
    assert (Path(sys.executable).parent / "jobset").exists()


def test_controller_runs_from_the_runtime_install_with_the_deployment_command(
    tmp_path: Path,
) -> None:
    blocked = _dev_only_modules()
    assert {"pytest", "hypothesis", "helm_python", "matplotlib"} <= blocked
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            BLOCKED = {sorted(blocked)!r}
            class Block:
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in BLOCKED:
                        raise ImportError(f"{{name}} is not in the runtime image")
                    return None
            sys.meta_path.insert(0, Block())
            """
        )
    )
    manager = yaml.safe_load((CONFIG / "manager" / "manager.yaml").read_text())
    (container,) = manager["spec"]["template"]["spec"]["containers"]
    ports = {"metrics": free_port(), "health": free_port(), "webhook": free_port()}
    args = [
        re.sub(
            r"^--(metrics|health|webhook)-port=\d+$", lambda m: f"--{m[1]}-port={ports[m[1]]}", a
        )
        for a in container["args"]
    ]
    sim = start_sim(tmp_path, "--sim-level", "none")
    try:
        sim.kubectl("apply", "--server-side", "-k", str(CONFIG / "install"), timeout=120)
        command = [
            str(Path(sys.executable).parent / container["command"][0]),
            *container["command"][1:],
        ]
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(site),
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": "/nonexistent",
            "POD_NAMESPACE": "jobset-system",
        }
        log = tmp_path / "controller.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [*command, *args, "--kubeconfig", str(sim.kubeconfig), "--bind-address=127.0.0.1"],
                cwd=tmp_path,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            try:

                def ready() -> bool:
                    assert proc.poll() is None, log.read_text()
                    return http_get(f"http://127.0.0.1:{ports['health']}/readyz")[0] == 200

                eventually(ready, within=60, interval=0.2)
                status, metrics = scrape_install(sim, ports["metrics"])  # secure by default
                assert status == 200 and "controller_runtime_reconcile_total" in metrics
                # The lease is where the Role allows it: the pod's namespace.
                lease = sim.kubectl("get", "lease", "jobset-controller-leader", "-n", "jobset-system",
                                    "-o", "jsonpath={.spec.holderIdentity}")  # fmt: skip
                assert lease.stdout
            finally:
                proc.terminate()
                code = proc.wait(timeout=60)
        assert code == 0, log.read_text()
        assert "is not in the runtime image" not in log.read_text()
    finally:
        sim.stop()
