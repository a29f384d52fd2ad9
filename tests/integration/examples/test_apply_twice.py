"""`kubectl apply -f` of every example twice: the second apply of an unchanged manifest
is no change (the JobSet's spec and generation stay as the first left them), and a real
change to an immutable field is still refused.

kubectl's three-way merge replaces the lists a manifest holds (`replicatedJobs`,
`volumeClaimPolicies`) with the manifest's, which lack the defaults the mutating webhook
filled in on create; the webhook fills them in again on update and the validation compares
the defaulted forms. One `jobset dev` at `--sim-level none`: nothing needs to run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobset.dev.examplekit import EXAMPLES_DIR, Example, load_examples, start_dev
from kubesim.process import SimProcess

pytestmark = [pytest.mark.kubectl]

EXAMPLES = load_examples()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    gates = "RestartJob=true,InPlaceRestart=true"
    sim = start_dev(
        tmp_path_factory.mktemp("twice"), "--sim-level", "none", "--feature-gates", gates
    )
    yield sim
    sim.stop()


def _jobset(dev: SimProcess, example: Example, namespace: str) -> dict[str, Any]:
    out = dev.kubectl("get", "jobset", example.name, "-n", namespace, "-o", "json").stdout
    found: dict[str, Any] = json.loads(out)
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.key)
def test_applying_an_unchanged_example_again_changes_nothing(
    dev: SimProcess, example: Example
) -> None:
    namespace = "twice-" + example.key
    dev.kubectl("create", "namespace", namespace)
    dev.kubectl(*example.apply_args(), "-n", namespace)
    first = _jobset(dev, example, namespace)
    again = dev.kubectl(*example.apply_args(), "-n", namespace, check=False)
    assert again.returncode == 0, again.stderr
    second = _jobset(dev, example, namespace)
    assert second["spec"] == first["spec"]
    assert second["metadata"]["generation"] == first["metadata"]["generation"]


def test_a_real_change_is_still_refused(dev: SimProcess, tmp_path: Path) -> None:
    namespace = "twice-changed"
    dev.kubectl("create", "namespace", namespace)
    original = (EXAMPLES_DIR / "simple.yaml").read_text()
    dev.kubectl("apply", "-f", "-", "-n", namespace, input=original)
    changed = original.replace("image: python:3.11-slim", "image: python:3.12-slim", 1)
    assert changed != original
    out = dev.kubectl("apply", "-f", "-", "-n", namespace, input=changed, check=False)
    assert out.returncode != 0
    assert 'The JobSet "simple" is invalid: spec.replicatedJobs: Invalid value: ' in out.stderr
    assert "field is immutable" in out.stderr
