"""A rolling upgrade from the previous release to this checkout, and `helm rollback`, with
zero failed admissions.

The previous release is a fixed older commit of main (`PREVIOUS`): its tree exported with
`git archive`, its wheel built and installed as the image has it, mapped as a second image
repository (`--run-image`). `helm install` of that commit's chart with that image, JobSets
started that run across everything, a client submitting JobSets and pods through the
webhooks without pause (`admissions.py`), then `helm upgrade` to this checkout's chart
and image, then `helm rollback` to the first revision. Not one admission may fail; the
JobSets running across both rollouts complete with no restart and no Job created twice.

What makes it hold (docs/reliability.md, "Upgrades"): maxUnavailable 0 / maxSurge 1, a pod
is ready only once its webhook server serves with its certificate, the PDB, and on SIGTERM
the webhook server keeps serving through `--webhook-drain-seconds` after readiness went
false, so the endpoints move away before it closes.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from kubesim.process import start_sim
from tests.integration.incluster.admissions import AdmissionLoad
from tests.integration.incluster.conftest import (
    CHART,
    IMAGE,
    LEADER_ELECTION,
    NS,
    RELEASE,
    Cluster,
    current_leader,
    eventually,
    finished,
    jobset_manifest,
    sim_flags,
    system_python,
)
from tests.wheel import build_wheel, export_commit, install

# Two wheel builds and two rollouts: minutes. `make soak`; the default tier's admissions
# through an upgrade and rollback of one image are test_helm_incluster.py's.
pytestmark = [pytest.mark.soak, pytest.mark.timeout(900)]

# The release upgraded from: a commit of main before the webhook drain existed (fixed, so the test's
# starting point does not move with every commit).
PREVIOUS = "04de238ac3b029fea8b7dd9335d6725046a498bb"
PREVIOUS_IMAGE = "ghcr.io/jobset-py/jobset-previous"
VALUES: dict[str, Any] = {
    "controller": {"replicas": 2, "leaderElection": LEADER_ELECTION},
    "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
}
WORK_NS = "upgrade"


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the previous commit's chart, `bin/` of a venv with its wheel), world-readable."""
    top = Path(tempfile.mkdtemp(prefix="jobset-previous-", dir="/var/tmp"))
    try:
        top.chmod(0o755)
        tree = export_commit(PREVIOUS, top / "tree")
        venv = install(top / "venv", build_wheel(top, root=tree), python=system_python())
        yield tree / "charts" / "jobset", venv / "bin"
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster2(
    controller_bin: Path, previous: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A cluster of its own with both images mapped."""
    tmp = tmp_path_factory.mktemp("upgrade")
    flags = sim_flags(controller_bin, "--run-image", f"{PREVIOUS_IMAGE}={previous[1]}")
    sim = start_sim(tmp, *flags, timeout=120)
    try:
        yield Cluster(
            sim, controller_bin, helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace=NS)
        )
    finally:
        sim.stop()


def _processes(cluster: Cluster, old_bin: Path) -> dict[str, int]:
    """How many controller processes of each image run (by the directory they run from)."""
    return {
        IMAGE: len(cluster.controller_processes()),
        PREVIOUS_IMAGE: len(dataclasses.replace(cluster, bin=old_bin).controller_processes()),
    }


def _only(cluster: Cluster, old_bin: Path, image: str) -> None:
    """The rollout is done and only `image`'s two processes run."""
    cluster.rollout()
    want = {IMAGE: 0, PREVIOUS_IMAGE: 0, image: 2}
    eventually(lambda: _processes(cluster, old_bin) == want or None, 120, f"only {image} processes")


def test_upgrade_and_rollback_fail_no_admission(
    cluster2: Cluster, previous: tuple[Path, Path]
) -> None:
    cluster = cluster2
    old_chart, old_bin = previous
    values_old = {**VALUES, "image": {"repository": PREVIOUS_IMAGE}}
    release = cluster.helm.install(
        old_chart, RELEASE, values_old, namespace=NS, create_namespace=True, timeout=120
    )
    assert release["status"] == "deployed"
    cluster.rollout()
    current_leader(cluster)
    cluster.kubectl("create", "namespace", WORK_NS)
    creates_before = cluster.requests("create", "jobs")
    for i in range(3):  # ~30 s of wall time each: across both rollouts
        cluster.kubectl(
            "apply", "-f", "-", input=jobset_manifest(f"long-{i}", WORK_NS, sleep="900s")
        )
    load = AdmissionLoad(cluster.sim.kubeconfig, WORK_NS)
    load.start()
    try:
        load.mark("steady")
        time.sleep(3)
        load.mark("upgrade")
        upgraded = cluster.helm.upgrade(CHART, RELEASE, VALUES, namespace=NS, timeout=120)
        assert upgraded["revision"] == 2
        _only(cluster, old_bin, IMAGE)
        load.mark("rollback")
        cluster.helm.rollback(RELEASE, version=1, timeout=120)
        _only(cluster, old_bin, PREVIOUS_IMAGE)
        load.mark("end")
        time.sleep(2)
    finally:
        load.stop()
    print(
        "admission figures:",
        {
            "sent": load.sent,
            "during_upgrade": load.sent_between("upgrade", "rollback"),
            "during_rollback": load.sent_between("rollback", "end"),
            "failed": len(load.failures),
        },
    )
    for failure in load.failures[:10]:
        print("failed admission:", failure)
    assert load.failures == []
    assert load.sent_between("upgrade", "rollback") > 10
    assert load.sent_between("rollback", "end") > 10
    for i in range(3):
        js = finished(cluster, f"long-{i}", WORK_NS)
        assert js["status"]["terminalState"] == "Completed", js["status"]
        assert js["status"].get("restarts", 0) == 0, js["status"]
    for name in load.created:
        finished(cluster, name, WORK_NS)
    jobs = len(cluster.json("get", "jobs", "-n", WORK_NS)["items"])
    assert cluster.requests("create", "jobs") - creates_before == jobs == 6 + len(load.created)
