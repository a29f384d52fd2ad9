"""Submit, watch and wait for JobSets run by the real controller: `jobset dev`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobset.api import constants as c
from jobset.sdk import JobSetClient, JobSetFailed, container, leader_workers, multislice
from jobset.sdk.builders import JobSetBuilder

from .conftest import Cli


async def test_sdk_submits_and_waits_for_completion(dev_sdk: JobSetClient) -> None:
    js = leader_workers(
        "e2e-lw",
        image="busybox",
        workers=3,
        leader_command=["sleep", "60s"],
        worker_command=["sleep", "30s"],
    )
    await dev_sdk.create(js)
    done = await dev_sdk.wait_until_finished("e2e-lw", timeout=120)
    assert done.terminal_state == "Completed"
    jobs = await dev_sdk.jobs(done)
    assert [j["metadata"]["name"] for j in jobs] == ["e2e-lw-leader-0", "e2e-lw-workers-0"]
    pods = await dev_sdk.pods(done)
    assert len(pods) == 4 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(p["spec"].get("nodeName") for p in pods)


async def test_sdk_sees_a_failure(dev_sdk: JobSetClient) -> None:
    js = (
        JobSetBuilder("e2e-fail")
        .replicated_job("w", [container("c", "busybox", command=["sh", "-c", "exit 1"])])
        .build()
    )
    await dev_sdk.create(js)
    with pytest.raises(JobSetFailed) as info:
        await dev_sdk.wait_until_finished("e2e-fail", timeout=120)
    failed = info.value.jobset.condition(c.CONDITION_FAILED)
    assert failed is not None and failed.reason == c.FAILED_JOBS_REASON


def test_cli_submit_wait_and_inspect(dev: Path) -> None:
    cli = Cli(dev, "default")
    manifest = multislice(
        "e2e-ms", image="busybox", slices=2, pods_per_slice=2, command=["sleep", "30s"]
    ).to_yaml()
    res = cli.run("submit", "-", "--wait", "--timeout", "120", input=manifest, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[0] == "jobset.jobset.x-k8s.io/e2e-ms created"
    assert res.stdout.splitlines()[-1].startswith("JobSet e2e-ms Completed")
    tree = cli.run("tree", "e2e-ms").stdout.splitlines()
    assert tree[0] == "JobSet default/e2e-ms (Completed)"
    assert sum(" Job e2e-ms-slice-" in line for line in tree) == 2
    assert sum(" Pod e2e-ms-slice-" in line and "Succeeded" in line for line in tree) == 4
    described = cli.run("describe", "e2e-ms").stdout
    assert "AllJobsCompleted" in described and "pool-" in described
    failing = leader_workers(
        "e2e-bad", image="busybox", workers=1, leader_command=["sh", "-c", "exit 3"]
    ).to_yaml()
    res = cli.run("submit", "-", "--wait", "--timeout", "120", input=failing, timeout=180)
    assert res.returncode == 3, res.stdout + res.stderr
    assert os.linesep.join(res.stdout.splitlines()).count("Failed") >= 1
