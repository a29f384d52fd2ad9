"""`jobset describe` and `jobset watch` say why a JobSet is not progressing, from what the
simulated cluster's components report: the scheduler's FailedScheduling verdict on pending pods
and the Job controller's FailedCreate when a webhook refuses its pods. No JobSet controller
runs: the test creates the child Jobs the way it would (labels, controller reference)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from jobset.api import constants as c
from kubesim.process import SimProcess
from tests.builders import jobset, rjob
from tests.eventually import eventually_sync
from tests.integration.commands.conftest import Cli
from tests.sims import refuse_pods


def _child_job(js: dict[str, Any], name: str, rjob_name: str, **pod: Any) -> dict[str, Any]:
    meta = js["metadata"]
    labels = {c.JOBSET_NAME_KEY: meta["name"], c.REPLICATED_JOB_NAME_KEY: rjob_name,
              c.RESTART_ATTEMPT_KEY: "0", **pod.pop("labels", {})}  # fmt: skip
    owner = {"apiVersion": c.API_VERSION, "kind": "JobSet", "name": meta["name"],
             "uid": meta["uid"], "controller": True}  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox:1.36", "command": ["sleep", "1"]}
                    ],
                    **pod,
                },
            },
        },
    }


def test_describe_and_watch_say_what_the_jobset_waits_on(sim_pods: SimProcess) -> None:
    ns = f"w-{uuid.uuid4().hex[:6]}"
    sim_pods.kubectl("create", "namespace", ns)
    cli = Cli(sim_pods.kubeconfig, ns)
    hook = f"deny.{ns}.example.com"
    refuse_pods(sim_pods, ns, hook)
    try:
        manifest = jobset("stuck", rjob("big", 1), rjob("hooked", 1), namespace=ns)
        sim_pods.kubectl("apply", "-f", "-", input=json.dumps(manifest))
        js = json.loads(sim_pods.kubectl("get", "jobset", "stuck", "-n", ns, "-o", "json").stdout)
        big = _child_job(js, "stuck-big-0", "big", nodeSelector={"pool": "none"})
        hooked = _child_job(js, "stuck-hooked-0", "hooked", labels={"hooked": "yes"})
        for job in (big, hooked):
            sim_pods.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))

        unschedulable = (
            "1 pod Pending: 0/4 nodes are available: "
            "4 node(s) didn't match Pod's node affinity/selector."
        )
        refused = f'Job stuck-hooked-0 cannot create pods: Error creating: Internal error occurred: failed calling webhook "{hook}"'

        def described() -> str:
            return cli.run("describe", "stuck").stdout

        out = eventually_sync(
            described,
            lambda text: unschedulable in text and refused in text,
            within=60,
            what="describe's Waiting on section",
        )
        section = out.split("Waiting on:", 1)[1].split("Events:", 1)[0]
        assert unschedulable in section and refused in section
        events = out.split("Events:", 1)[1]
        assert "FailedScheduling" in events and "FailedCreate" in events
        as_json = json.loads(cli.run("describe", "stuck", "-o", "json").stdout)
        kinds = {b["kind"] for b in as_json["blockers"]}
        assert {"Unschedulable", "FailedCreate"} <= kinds

        watched = cli.run("watch", "stuck", "--timeout", "3", "--explain-every", "0.5")
        assert watched.returncode == 4, watched.stderr
        assert f"waiting on: {unschedulable}" in watched.stdout
        assert "waiting on: Job stuck-hooked-0 cannot create pods" in watched.stdout
        quiet = cli.run("watch", "stuck", "--timeout", "1", "--explain-every", "0")
        assert quiet.returncode == 4 and "waiting on" not in quiet.stdout
    finally:
        sim_pods.kubectl("delete", "validatingwebhookconfiguration", ns, "--wait=false")
