"""The examples/ header format and the outcome checks (pure: no cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobset.dev.demo import render_plain, rows_for
from jobset.dev.examplekit import (
    EXAMPLES_DIR,
    Expectation,
    comment_commands,
    load_example,
    load_examples,
    observed_from,
    parse_expectation,
    unmet,
)

POOL = "cloud.google.com/gke-nodepool"


def test_parse_expectation() -> None:
    e = parse_expectation(
        "Failed reason=ReachedMaxRestarts restarts=3 condition=A condition=B "
        "present=pvc/x absent=svc/y exclusive=k jobs=2 job-restarts=1 service=s"
    )
    assert e == Expectation(
        state="Failed",
        reason="ReachedMaxRestarts",
        restarts=3,
        job_restarts=1,
        jobs=2,
        conditions=("A", "B"),
        services=("s",),
        exclusive="k",
        present=("pvc/x",),
        absent=("svc/y",),
    )
    assert parse_expectation(str(e)) == e
    assert parse_expectation("deleted") == Expectation("deleted")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Done",
        "Completed restarts=x",
        "Completed colour=red",
        "Completed restarts",
        "Completed present=x",
        "Completed present=widget/x",
    ],
)
def test_parse_expectation_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_expectation(text)


MANIFEST = """\
# demo.yaml - a title line.
#
# Free text. expect: this line is prose, not a key.
# jobset-dev-flags: --feature-gates RestartJob=true --nodes 'pools=2x2,tpu=4'
# expect: Suspended jobs=1
# then-run: kubectl patch jobset js --type merge -p '{"spec":{"suspend":false}}'
# then-expect: Completed
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: js
spec:
  replicatedJobs: []
"""


def test_load_example(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(MANIFEST)
    ex = load_example(path)
    assert ex.name == "js"
    assert ex.title == "demo.yaml - a title line."
    assert ex.dev_flags == ("--feature-gates", "RestartJob=true", "--nodes", "pools=2x2,tpu=4")
    assert ex.expect == Expectation("Suspended", jobs=1)
    patch = '{"spec":{"suspend":false}}'
    assert ex.then_run == ("patch", "jobset", "js", "--type", "merge", "-p", patch)
    assert ex.then_expect == Expectation("Completed")
    assert ex.apply_args() == ["apply", "-f", str(path)]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("# expect: Suspended jobs=1\n", "", "no '# expect:'"),
        ("# expect: Suspended jobs=1\n", "# expect: Suspended\n# expect: Failed\n", "twice"),
        ("# then-expect: Completed\n", "", "go together"),
        ("# then-run: kubectl", "# then-run: echo", "kubectl command"),
        ("kind: JobSet", "kind: Job", "exactly one JobSet"),
    ],
    ids=[
        "no expectation",
        "two expectations",
        "then-expect without then-run",
        "then-run not kubectl",
        "not exactly one JobSet",
    ],
)
def test_load_example_rejects(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(MANIFEST.replace(old, new))
    with pytest.raises(ValueError, match=message):
        load_example(path)


def test_every_example_declares_a_valid_outcome() -> None:
    examples = load_examples()
    files = {p.name for p in EXAMPLES_DIR.glob("*.yaml")}
    dirs = {p.parent.name for p in EXAMPLES_DIR.glob("*/jobset.yaml")}
    assert {e.key + ("" if e.kustomized else ".yaml") for e in examples} == files | dirs
    for ex in examples:
        named = ex.key if ex.kustomized else ex.path.name
        assert ex.title.startswith(named + " - "), ex.path
        verb = "kubectl apply -k " if ex.kustomized else "kubectl apply -f "
        assert verb + ex.shown in ex.manifest, ex.path
        for flag in ex.dev_flags:
            assert "kubeconfig" not in flag and "time-scale" not in flag


def _js(terminal: str | None = None, **status: Any) -> dict[str, Any]:
    conds = []
    if terminal:
        conds.append({"type": terminal, "status": "True", "reason": "R"})
        status["terminalState"] = terminal
    return {
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns"},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 2}]},
        "status": {"conditions": conds, **status},
    }


def _job(name: str, uid: str, suspend: bool = False, index: int = 0) -> dict[str, Any]:
    labels = {
        "jobset.sigs.k8s.io/jobset-name": "js",
        "jobset.sigs.k8s.io/replicatedjob-name": "w",
        "jobset.sigs.k8s.io/job-index": str(index),
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    return {
        "kind": "Job",
        "metadata": {"name": name, "uid": uid, "labels": labels},
        "spec": {"suspend": suspend},
    }


def _pod(job_uid: str, node: str, start: str, end: str | None) -> dict[str, Any]:
    term = {"terminated": {"finishedAt": end}} if end else {"running": {}}
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"p-{node}",
            "ownerReferences": [{"uid": job_uid, "controller": True}],
        },
        "spec": {"nodeName": node},
        "status": {
            "phase": "Succeeded" if end else "Running",
            "startTime": start,
            "containerStatuses": [{"state": term}],
        },
    }


def _node(name: str, pool: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {POOL: pool}}}


def test_unmet_terminal_states() -> None:
    done = observed_from("js", _js("Completed", restarts=1), [_job("js-w-0", "u0")])
    assert unmet(parse_expectation("Completed restarts=1 reason=R jobs=1"), done) == []
    assert unmet(parse_expectation("Completed restarts=0"), done) == ["restarts is 1"]
    assert unmet(parse_expectation("Failed"), done) == [
        "terminalState is 'Completed'",
    ]
    assert unmet(parse_expectation("Completed jobs=2"), done) == ["1 child Jobs, want 2"]
    assert unmet(parse_expectation("Completed condition=X"), done) == ["condition X is not True"]
    assert unmet(parse_expectation("deleted"), done) == ["the JobSet still exists"]
    gone = observed_from("js", None, [])
    assert unmet(parse_expectation("deleted"), gone) == []
    assert unmet(parse_expectation("Completed"), gone) == ["the JobSet does not exist"]


def test_unmet_job_restarts_and_objects() -> None:
    js = _js("Completed", replicatedJobsStatus=[{"name": "w", "jobRestarts": [0, 2]}])
    svc = {
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True},
    }
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data-js"}}
    seen = observed_from("js", js, [svc, pvc])
    ok = "Completed job-restarts=2 service=s present=pvc/data-js absent=pvc/other"
    assert unmet(parse_expectation(ok), seen) == []
    bad = "Completed job-restarts=1 service=t present=pvc/other absent=pvc/data-js"
    assert unmet(parse_expectation(bad), seen) == [
        "job restarts add up to 2",
        "no headless Service t publishing not-ready addresses",
        "pvc/other does not exist",
        "pvc/data-js still exists",
    ]


def test_unmet_suspended_needs_every_job_suspended() -> None:
    js = _js(None)
    js["status"]["conditions"] = [{"type": "Suspended", "status": "True", "reason": "S"}]
    jobs = [_job("js-w-0", "u0", suspend=True), _job("js-w-1", "u1", suspend=False)]
    assert unmet(parse_expectation("Suspended reason=S"), observed_from("js", js, jobs)) == [
        "Jobs not suspended: js-w-1"
    ]
    jobs[1]["spec"]["suspend"] = True
    assert unmet(parse_expectation("Suspended reason=S"), observed_from("js", js, jobs)) == []


def test_unmet_exclusive_placement() -> None:
    nodes = [_node("a1", "pool-a"), _node("a2", "pool-a"), _node("b1", "pool-b")]
    expect = parse_expectation(f"Completed exclusive={POOL}")
    jobs = [_job("js-w-0", "u0"), _job("js-w-1", "u1", index=1)]

    def check(*pods: dict[str, Any]) -> list[str]:
        return unmet(expect, observed_from("js", _js("Completed"), [*jobs, *pods], nodes))

    t = "2025-01-01T00:00:{:02d}Z".format
    # one pool each
    one_each = (_pod("u0", "a1", t(0), t(9)), _pod("u0", "a2", t(0), t(9)))
    assert check(*one_each, _pod("u1", "b1", t(0), t(9))) == []
    # a Job across two pools
    assert check(
        _pod("u0", "a1", t(0), t(9)), _pod("u0", "b1", t(0), t(9)), _pod("u1", "b1", t(0), t(9))
    ) == [
        f"Job js-w-0 spans {POOL} values ['pool-a', 'pool-b']",
        f"Jobs js-w-0 and js-w-1 ran at the same time in {POOL}=pool-b",
    ]
    # sharing a pool one after the other is fine, at the same time it is not
    assert check(_pod("u0", "a1", t(0), t(5)), _pod("u1", "a2", t(5), t(9))) == []
    assert check(_pod("u0", "a1", t(0), t(6)), _pod("u1", "a2", t(5), None)) == [
        f"Jobs js-w-0 and js-w-1 ran at the same time in {POOL}=pool-a"
    ]
    assert check(_pod("u0", "a1", t(0), t(6))) == ["no scheduled pods of Job js-w-1 to check"]


def test_demo_table_rows() -> None:
    js = _js(None, restarts=0, replicatedJobsStatus=[{"name": "w", "ready": 1, "succeeded": 1}])
    nodes = [_node("a1", "pool-a"), _node("b1", "pool-b")]
    jobs = [_job("js-w-0", "u0"), _job("js-w-1", "u1", index=1)]
    pods = [_pod("u0", "a1", "t", None), _pod("u1", "b1", "t", "u")]
    rows = rows_for(js, jobs, pods, nodes)
    assert len(rows) == 1
    row = rows[0]
    assert (row.jobset, row.phase, row.restarts, row.rjob) == ("js", "Running", "0", "w")
    assert (row.ready, row.succeeded, row.failed) == ("1", "1", "0")
    assert row.placement == "0:pool-a 1:pool-b"
    text = render_plain(rows).splitlines()
    assert text[0].split()[:3] == ["JOBSET", "PHASE", "RESTARTS"]
    assert text[1].split() == ["js", "Running", "0", "w", "1", "1", "0", "0:pool-a", "1:pool-b"]


def test_in_place_attempt_check_and_jobset_bin(tmp_path: Path) -> None:
    import sysconfig

    js = _js("Completed", currentInPlaceRestartAttempt=1)
    seen = observed_from("js", js, [])
    assert parse_expectation("Completed in-place-attempt=1").in_place_attempt == 1
    assert unmet(parse_expectation("Completed in-place-attempt=1"), seen) == []
    assert unmet(parse_expectation("Completed in-place-attempt=2"), seen) == [
        "currentInPlaceRestartAttempt is 1"
    ]
    path = tmp_path / "ip.yaml"
    path.write_text(
        MANIFEST.replace("--nodes 'pools=2x2,tpu=4'", "--run-image example.com/agent=$JOBSET_BIN")
    )
    flags = load_example(path).dev_flags
    assert flags[-1] == f"example.com/agent={sysconfig.get_path('scripts')}"


def test_log_check() -> None:
    expect = parse_expectation("Completed log=resumed-from-step=[1-9] log=done")
    assert expect.logs == ("resumed-from-step=[1-9]", "done")
    assert parse_expectation(str(expect)) == expect
    seen = observed_from("js", _js("Completed"), [])
    seen.logs = "[pod/js-w-0-0/jax] resumed-from-step=100\n[pod/js-w-0-0/jax] done\n"
    assert unmet(expect, seen) == []
    seen.logs = "[pod/js-w-0-0/jax] resumed-from-step=0\n"
    assert unmet(expect, seen) == [
        "no pod's log matches 'resumed-from-step=[1-9]'",
        "no pod's log matches 'done'",
    ]
    with pytest.raises(ValueError, match="regular expression"):
        parse_expectation("Completed log=(unclosed")


def test_directory_example_is_kustomized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example_dir = tmp_path / "train"
    example_dir.mkdir()
    (example_dir / "jobset.yaml").write_text(
        MANIFEST.replace("--nodes 'pools=2x2,tpu=4'", "--run-image example.com/t=$TRAIN_BIN")
    )
    monkeypatch.setenv("JOBSET_TRAIN_BIN", "/opt/train/bin")
    example = load_example(example_dir / "jobset.yaml")
    assert example.key == "train" and not example.kustomized
    assert example.apply_args() == ["apply", "-f", str(example_dir / "jobset.yaml")]
    assert example.dev_flags[-1] == "example.com/t=/opt/train/bin"
    (example_dir / "kustomization.yaml").write_text("resources: [jobset.yaml]\n")
    assert example.kustomized and example.shown == f"examples/{example_dir.name}"
    assert example.apply_args() == ["apply", "-k", str(example_dir)]
    assert [e.key for e in load_examples(tmp_path)] == ["train"]


def test_comment_commands_are_the_indented_command_lines_of_the_header() -> None:
    text = (
        "# title - words\n"
        "#\n"
        "# Shows: `kubectl get pods` in prose is not a command line.\n"
        "#   kubectl apply -f examples/simple.yaml\n"
        "#   jobset dev --kubeconfig /tmp/k \\\n"
        "#     --feature-gates A=true &\n"
        "#   an indented line of prose\n"
        "#   make demo   # a comment\n"
        "apiVersion: v1\n"
        "#   kubectl after the header is not read\n"
    )
    assert comment_commands(text) == [
        "kubectl apply -f examples/simple.yaml",
        "jobset dev --kubeconfig /tmp/k --feature-gates A=true &",
        "make demo   # a comment",
    ]


def test_files_beside_the_examples_name_no_commands_in_comments() -> None:
    """The example tests run the commands of examples' headers; the other files with `#`
    comments (Dockerfiles, kustomizations) must not name commands nobody runs."""
    examples = {e.path for e in load_examples()}
    others = [
        p
        for p in EXAMPLES_DIR.rglob("*")
        if p.is_file()
        and p not in examples
        and (p.suffix in (".yaml", ".yml") or p.name == "Dockerfile")
    ]
    assert others  # the jax-train directory has both
    for path in others:
        assert comment_commands(path.read_text()) == [], path
