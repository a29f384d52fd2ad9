"""`jobset logs -f` follows a JobSet through a group restart, and `describe` / `watch` stop
saying it waits on that restart once it is over: against `jobset dev` (the real controller
restarting the JobSet)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from jobset.api import constants as c
from tests.eventually import eventually_sync

from .conftest import Cli

# Each worker says hello with its index and attempt, runs 10 s (time-scale 0.02), then the
# first attempt fails (a RestartJobSet by the default failure policy) and the second ends.
SCRIPT = (
    'echo "hello $JOB_COMPLETION_INDEX attempt $ATTEMPT"; sleep 500; '
    'if [ "$ATTEMPT" = "0" ]; then echo failing; exit 1; fi; echo done'
)
ATTEMPT_ENV = {
    "name": "ATTEMPT",
    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{c.RESTART_ATTEMPT_KEY}']"}},
}


def _manifest(name: str) -> str:
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", SCRIPT],
                 "env": [ATTEMPT_ENV]}  # fmt: skip
    job = {"parallelism": 2, "completions": 2, "completionMode": "Indexed", "backoffLimit": 0,
           "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}  # fmt: skip
    js = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": {"maxRestarts": 2},
            "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": job}}],
        },
    }
    return yaml.safe_dump(js)


def test_logs_follow_a_jobset_through_a_restart(dev: Path) -> None:
    cli = Cli(dev, "default")
    assert cli.run("submit", "-", input=_manifest("talk")).returncode == 0
    follow = cli.start("logs", "talk", "-f")
    watch = cli.start("watch", "talk", "--explain-every", "1")
    head = cli.start("logs", "talk", "-f")  # as `| head -1`: its reader goes after a line
    try:
        assert head.stdout is not None and head.stdout.readline().startswith("workers-")
        head.stdout.close()
        out, err = follow.communicate(timeout=150)
        assert head.wait(timeout=60) == 141
        assert head.stderr is not None and head.stderr.read() == ""
    finally:
        for proc in (follow, head):
            proc.kill()
    assert follow.returncode == 0, err
    lines = out.splitlines()
    for job in (0, 1):
        for pod in (0, 1):
            mine = [line for line in lines if line.startswith(f"workers-{job}-{pod} ")]
            prefix = f"workers-{job}-{pod}"
            assert mine == [
                f"{prefix} hello {pod} attempt 0",
                f"{prefix} failing",
                f"{prefix} hello {pod} attempt 1",
                f"{prefix} done",
            ], out
    watched, _ = watch.communicate(timeout=60)
    assert watch.returncode == 0 and "JobSet talk Completed" in watched
    # Once every Job of attempt 1 is ready, the restart's Warning is no longer what watch
    # says the JobSet waits on: whatever it said after that ends in "no longer waiting"
    # (without the fix, the Warning was repeated for the rest of the run).
    ready = re.search(r"^\[ *([\d.]+)s\] Running, restarts 1: workers 2/0/0 of 2$", watched, re.M)
    assert ready is not None, watched
    waits = re.findall(r"^\[ *([\d.]+)s\]   (waiting on: .*|no longer waiting)$", watched, re.M)
    after = [text for t, text in waits if float(t) > float(ready.group(1))]
    assert not after or after[-1] == "no longer waiting", watched


def test_describe_drops_a_restart_that_is_over(dev: Path) -> None:
    cli = Cli(dev, "default")
    assert cli.run("submit", "-", input=_manifest("again")).returncode == 0

    def state() -> dict[str, object]:
        res = cli.run("describe", "again", "-o", "json")
        return json.loads(res.stdout) if res.returncode == 0 else {}

    def restarted_and_running(snap: dict[str, object]) -> bool:
        js = snap.get("jobset") or {}
        status = js.get("status") or {}  # type: ignore[attr-defined]
        pods = [p for j in snap.get("jobs") or [] for p in j["pods"]]  # type: ignore[attr-defined]
        restarting = [cd for cd in status.get("conditions") or []
                      if cd["type"] == c.CONDITION_RESTARTING]  # fmt: skip
        return (
            status.get("restarts") == 1
            and [cd["status"] for cd in restarting] == ["False"]
            and len(pods) == 4
            and all(p["phase"] == "Running" for p in pods)
            and all(j["attempt"] == "1" for j in snap["jobs"])  # type: ignore[attr-defined]
        )

    snap = eventually_sync(state, restarted_and_running, within=120, what="attempt 1 running")
    texts = [b["message"] for b in snap["blockers"]]  # type: ignore[attr-defined]
    assert not any("failure policy action" in t for t in texts), texts
    described = cli.run("describe", "again").stdout
    assert "RestartJobSet failure policy action" not in described.split("Events:")[0]
