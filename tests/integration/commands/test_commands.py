"""The user commands against a simulated API server: output, formats, exit codes, errors."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import yaml

from jobset.sdk import JobSetClient, leader_workers, multislice

from .conftest import Cli
from .helpers import completed, condition, failed, set_status

pytestmark = [pytest.mark.kubectl]

LW = leader_workers("lw", image="busybox", workers=3).to_yaml()
MS = multislice("ms", image="busybox", slices=2, pods_per_slice=2).to_yaml()


def test_submit_multi_doc_then_get_table(cli: Cli) -> None:
    res = cli.run("submit", "-", input=LW + "---\n" + MS)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "jobset.jobset.x-k8s.io/lw created",
        "jobset.jobset.x-k8s.io/ms created",
    ]
    res = cli.run("get")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "PHASE",
        "READY/SUCCEEDED/FAILED",
        "OF",
        "REPLICAS",
        "RESTARTS",
        "AGE",
    ]
    assert lines[1].startswith("lw ") and "leader 0/0/0 of 1, workers 0/0/0 of 1" in lines[1]
    assert lines[2].startswith("ms ") and "Pending" in lines[2] and "slice 0/0/0 of 2" in lines[2]


async def test_get_shows_status_progress_and_all_namespaces(cli: Cli, sdk: JobSetClient) -> None:
    assert cli.run("submit", "-", input=MS).returncode == 0
    await set_status(
        sdk,
        "ms",
        {
            "restarts": 2,
            "replicatedJobsStatus": [
                {
                    "name": "ms" and "slice",
                    "ready": 1,
                    "succeeded": 1,
                    "failed": 0,
                    "active": 1,
                    "suspended": 0,
                }
            ],
        },
    )
    row = cli.run("get", "ms").stdout.splitlines()[1].split()
    assert row[:2] == ["ms", "Running"]
    assert " ".join(row[2:6]) == "slice 1/1/0 of 2"
    assert row[6] == "2"
    everywhere = cli.run("get", "-A", namespaced=False)
    assert everywhere.returncode == 0
    assert any(
        line.split()[:3] == [cli.namespace, "ms", "Running"]
        for line in everywhere.stdout.splitlines()
    )


def test_output_formats_parse(cli: Cli) -> None:
    assert cli.run("submit", "-", input=LW).returncode == 0
    one = json.loads(cli.run("get", "lw", "-o", "json").stdout)
    assert one["kind"] == "JobSet" and one["metadata"]["name"] == "lw"
    many = json.loads(cli.run("get", "-o", "json").stdout)
    assert many["kind"] == "List" and [i["metadata"]["name"] for i in many["items"]] == ["lw"]
    as_yaml = yaml.safe_load(cli.run("get", "lw", "-o", "yaml").stdout)
    assert as_yaml["spec"]["replicatedJobs"][0]["name"] == "leader"
    assert cli.run("get", "-o", "name").stdout == "jobset.jobset.x-k8s.io/lw\n"
    described = json.loads(cli.run("describe", "lw", "-o", "json").stdout)
    assert described["jobset"]["metadata"]["name"] == "lw" and described["jobs"] == []
    tree = json.loads(cli.run("tree", "lw", "-o", "json").stdout)
    assert tree["jobs"] == []


def test_not_found_is_one_line_and_exit_1(cli: Cli) -> None:
    for args in (
        ("get", "nope"),
        ("describe", "nope"),
        ("tree", "nope"),
        ("watch", "nope"),
        ("delete", "nope"),
    ):
        res = cli.run(*args)
        assert res.returncode == 1, args
        assert res.stderr == 'Error: jobsets.jobset.x-k8s.io "nope" not found\n', args
        assert res.stdout == ""


def test_empty_namespace_and_unreachable_server(cli: Cli, tmp_path: object) -> None:
    res = cli.run("get")
    assert (
        res.returncode == 0 and res.stdout == f"No resources found in {cli.namespace} namespace.\n"
    )
    res = cli.run("get", "--kubeconfig", "/nonexistent/kubeconfig")
    assert res.returncode == 1 and res.stderr.startswith("Error: ")
    assert "Traceback" not in res.stderr and len(res.stderr.splitlines()) == 1


def test_submit_validates_every_document_before_creating_any(cli: Cli) -> None:
    # The middle one of three is refused by the CRD schema: the server's dry run sees it
    # before anything is created, and --dry-run=client words it the same way.
    head, tail = LW.replace("name: lw", "name: neg", 1).rsplit("replicas: 1", 1)
    neg = head + "replicas: -1" + tail
    text = MS + "---\n" + neg + "---\n" + LW
    refusal = (
        'Error: JobSet.jobset.x-k8s.io "neg" is invalid: spec.replicatedJobs[1].replicas: '
        "Invalid value: -1: spec.replicatedJobs[1].replicas in body should be greater than or "
        "equal to 0\n"
    )
    for dry_run in ([], ["--dry-run=client"]):
        res = cli.run("submit", "-", *dry_run, input=text)
        assert res.returncode == 1, res.stdout
        assert res.stderr == refusal and res.stdout == ""
        for name in ("ms", "neg", "lw"):
            assert cli.run("get", name).returncode == 1  # nothing was created
    # A typo is an unknown field: refused here as the server refuses it under Strict.
    # A typo is an unknown field: refused by the server's Strict dry run and by the client's
    # check, in the same words, and nothing is created.
    typo = MS.replace("replicas:", "replcas:", 1)
    for dry_run in ([], ["--dry-run=client"]):
        res = cli.run("submit", "-", *dry_run, input=typo)
        assert res.returncode == 1
        assert 'unknown field "spec.replicatedJobs[0].replcas"' in res.stderr, res.stderr
        assert cli.run("get", "ms").returncode == 1
    # The webhook's own rules, here (the cluster of this test runs no webhook).
    long = LW.replace("name: lw", "name: " + "x" * 60, 1)
    res = cli.run("submit", "-", "--dry-run=client", input=MS + "---\n" + long)
    assert res.returncode == 1
    assert "spec.replicatedJobs[0].name: Invalid value" in res.stderr
    assert res.stderr.startswith('Error: JobSet.jobset.x-k8s.io "xxxx')
    res = cli.run("submit", "-", input="apiVersion: v1\nkind: ConfigMap\n")
    assert res.returncode == 1 and "expected apiVersion jobset.x-k8s.io/v1alpha2" in res.stderr
    res = cli.run("submit", "-", "--dry-run", input=MS)
    assert res.returncode == 0 and "valid (dry run)" in res.stdout
    assert cli.run("get", "ms").returncode == 1
    other = MS.replace("name: ms", "name: ms\n  namespace: elsewhere", 1)
    res = cli.run("submit", "-", input=other)
    assert res.returncode == 1 and "does not match the namespace" in res.stderr


def test_submit_twice_reports_already_exists(cli: Cli) -> None:
    assert cli.run("submit", "-", input=MS).returncode == 0
    res = cli.run("submit", "-", input=MS)
    assert res.returncode == 1
    assert res.stderr == 'Error: jobsets.jobset.x-k8s.io "ms" already exists\n'


async def test_describe_shows_spec_conditions_timeline(cli: Cli, sdk: JobSetClient) -> None:
    assert cli.run("submit", "-", input=LW).returncode == 0
    await set_status(
        sdk,
        "lw",
        {
            "restarts": 1,
            "conditions": [
                condition("RestartingJobSet", "DefaultFailurePolicy", "restarting", "False")
                | {"lastTransitionTime": "2024-05-01T09:00:00Z"},
                *completed()["conditions"],
            ],
            "terminalState": "Completed",
        },
    )
    out = cli.run("describe", "lw").stdout
    assert "Phase:              Completed" in out
    assert "Coordinator:        lw-leader-0-0.lw" in out
    lines = out.splitlines()
    start = lines.index("Conditions:")
    assert lines[start + 2].split()[:3] == ["2024-05-01T09:00:00Z", "RestartingJobSet", "False"]
    assert lines[start + 3].split()[:4] == [
        "2024-05-01T10:00:00Z",
        "Completed",
        "True",
        "AllJobsCompleted",
    ]
    workers = next(line for line in lines if line.startswith("  workers "))
    assert workers.split() == ["workers", "default", "1", "3", "leader", "(Ready)", "-"]
    tree = cli.run("tree", "lw").stdout
    assert tree.splitlines() == [f"JobSet {cli.namespace}/lw (Completed)"]


async def _watch_with(
    cli: Cli, sdk: JobSetClient, name: str, status: dict[str, object] | None, *extra: str
) -> tuple[int, str]:
    proc = cli.start("watch", name, *extra)
    await asyncio.sleep(1.5)  # let it start watching
    if status is not None:
        await set_status(sdk, name, status)
    out, err = await asyncio.to_thread(proc.communicate, timeout=60)
    assert "Traceback" not in err
    return proc.returncode, out


async def test_watch_exit_codes(cli: Cli, sdk: JobSetClient) -> None:
    assert cli.run("submit", "-", input=LW + "---\n" + MS).returncode == 0
    code, out = await _watch_with(cli, sdk, "lw", completed())
    assert code == 0
    assert (
        out.splitlines()[-1]
        == "JobSet lw Completed (AllJobsCompleted: jobset completed successfully)"
    )
    code, out = await _watch_with(cli, sdk, "ms", failed())
    assert code == 3 and "JobSet ms Failed (FailedJobs" in out
    # already finished: returns at once
    assert cli.run("watch", "lw").returncode == 0


async def test_watch_timeout_and_deleted(cli: Cli, sdk: JobSetClient) -> None:
    assert cli.run("submit", "-", input=LW).returncode == 0
    t0 = time.monotonic()
    res = cli.run("watch", "lw", "--timeout", "1")
    assert res.returncode == 4 and "timed out after 1s" in res.stdout
    assert time.monotonic() - t0 < 20
    proc = cli.start("watch", "lw")
    assert proc.stdout is not None
    # Delete only once the watch is following the JobSet (its first progress line), so a
    # slow start on a loaded machine cannot turn this into a NotFound.
    first = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout=60)
    assert "Pending" in first
    await sdk.delete("lw")
    rest, _ = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 5 and "JobSet lw was deleted" in first + rest


def test_delete(cli: Cli) -> None:
    assert cli.run("submit", "-", input=LW + "---\n" + MS).returncode == 0
    res = cli.run("delete", "lw", "nope", "ms")
    assert res.returncode == 1
    assert res.stdout.splitlines() == [
        'jobset.jobset.x-k8s.io "lw" deleted',
        'jobset.jobset.x-k8s.io "ms" deleted',
    ]
    assert res.stderr == 'Error: jobsets.jobset.x-k8s.io "nope" not found\n'
    assert cli.run("get", "-o", "json").stdout.count('"name": "lw"') == 0


async def test_describe_escapes_terminal_controls(cli: Cli, sdk: JobSetClient) -> None:
    assert cli.run("submit", "-", input=LW).returncode == 0
    hostile = "boom\x1b]0;owned\x07\x1b[2J\x1b]52;c;cGF5\x1b\\\x9b31m\rend"
    await set_status(
        sdk,
        "lw",
        {"conditions": [condition("Failed", "BackoffLimitExceeded", hostile)]},
    )
    out = cli.run("describe", "lw").stdout
    assert "boom^[]0;owned^G^[[2J^[]52;c;cGF5^[\\\\x9b31m\\rend" in out
    assert not any(ch in out for ch in "\x1b\x07\x9b\r")
