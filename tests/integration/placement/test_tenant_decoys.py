"""A tenant cannot take planned domains from, or get Jobs deleted in, another namespace.

The tenant holds a ServiceAccount token that RBAC (enforced by `jobset sim --sim-level
pods`) scopes to Jobs in its own namespace. Before the victim plans anything it creates
suspended Jobs - older than any of the victim's - and later labels each with a domain, with
every annotation the planner writes; half of them also claim the victim's JobSet as their
controller owner. The controller must not count them: the victim's running Jobs keep their
domains and UIDs (their own events are replayed after the decoys appear), and a second
victim JobSet still gets the two domains nobody else runs in.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from jobset.api import constants as c
from jobset.placement.strategy import DOMAIN_KEY, PRIORITY_ANNOTATION, STRATEGY_KEY
from kubesim.process import SimProcess
from tests import builders
from tests.integration.placement.conftest import POOL_KEY
from tests.integration.placement.process import HarnessProcess
from tests.integration.placement.test_strategies import wait
from tests.tokens import request_token

pytestmark = [pytest.mark.timeout(300), pytest.mark.kubectl]

TENANT = "tenant"
VICTIM_NS = "victim"
POOLS = [f"pool-{i}" for i in range(4)]


def tenant_rbac() -> list[dict[str, Any]]:
    meta = {"name": TENANT, "namespace": TENANT}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TENANT},
            "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": TENANT}],
        },
    ]


def decoy(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"decoy-{index}", "namespace": TENANT},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            },
        },
    }


def planned_jobset(name: str) -> dict[str, Any]:
    annotations = {c.EXCLUSIVE_KEY: POOL_KEY, STRATEGY_KEY: "planned"}
    w = builders.rjob(
        "w",
        2,
        parallelism=2,
        indexed=None,
        container="c",
        command=["sleep", "infinity"],
        container_fields={"resources": {"requests": {"cpu": "1"}}},
    )
    return builders.jobset(
        name,
        w,
        namespace=VICTIM_NS,
        annotations=annotations,
        network={"enableDNSHostnames": False},
    )


def planned_jobs(sim: SimProcess, name: str) -> dict[str, tuple[str, str]]:
    """Job name -> (uid, domain) of the JobSet's live Jobs that carry a domain."""
    out = sim.kubectl(
        "get", "jobs", "-n", VICTIM_NS, "-l", f"{c.JOBSET_NAME_KEY}={name}", "-o", "json"
    ).stdout
    found = {}
    for job in json.loads(out)["items"]:
        meta = job["metadata"]
        domain = (meta.get("labels") or {}).get(DOMAIN_KEY)
        if domain and not meta.get("deletionTimestamp"):
            found[meta["name"]] = (meta["uid"], domain)
    return found


def test_a_tenant_scoped_token_cannot_starve_or_delete_planned_jobs(
    sim_pods: SimProcess, harness: HarnessProcess
) -> None:
    for ns in (TENANT, VICTIM_NS):
        sim_pods.kubectl("create", "namespace", ns)
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(tenant_rbac()))
    as_tenant = ["--token", request_token(sim_pods, TENANT, TENANT)]

    def tenant(*args: str, **kw: Any) -> Any:
        return sim_pods.kubectl(*as_tenant, *args, **kw)

    # The token is scoped: Jobs in its own namespace only.
    refused = tenant(
        "create", "-f", "-", input=yaml.safe_dump({**decoy(9), "metadata": {
            "name": "decoy-9", "namespace": VICTIM_NS}}), check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused.stderr
    # 1. Old, suspended, innocent-looking Jobs, before the victim exists.
    tenant("create", "-f", "-", input=yaml.safe_dump_all([decoy(i) for i in range(4)]))

    # 2. The victim's first planned JobSet gets two domains.
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(planned_jobset("first")))
    first = wait(
        lambda: (got := planned_jobs(sim_pods, "first")) and len(got) == 2 and got,
        120,
        "the first JobSet's Jobs planned",
    )
    owner = json.loads(
        sim_pods.kubectl("get", "jobset", "first", "-n", VICTIM_NS, "-o", "json").stdout
    )["metadata"]

    # 3. The decoys take every domain, with the planner's whole record; two of them claim
    # the victim's JobSet (its name and UID) as their controller.
    for i, pool in enumerate(POOLS):
        patch: dict[str, Any] = {
            "metadata": {
                "labels": {DOMAIN_KEY: pool, c.JOBSET_NAME_KEY: "first"},
                "annotations": {
                    c.EXCLUSIVE_KEY: POOL_KEY,
                    DOMAIN_KEY: pool,
                    PRIORITY_ANNOTATION: "0",
                    STRATEGY_KEY: "planned",
                },
            }
        }
        if i % 2:
            patch["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": c.API_VERSION,
                    "kind": c.KIND,
                    "name": "first",
                    "uid": owner["uid"],
                    "controller": True,
                }
            ]
        tenant("patch", "job", f"decoy-{i}", "-n", TENANT, "--type=merge", "-p", json.dumps(patch))
    # Every victim Job has an event after the decoys: its conflict check runs again.
    for name in first:
        sim_pods.kubectl("label", "job", name, "-n", VICTIM_NS, "touched=yes")

    # 4. A second victim JobSet gets the two domains the first does not run in.
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(planned_jobset("second")))
    second = wait(
        lambda: (got := planned_jobs(sim_pods, "second")) and len(got) == 2 and got,
        120,
        "the second JobSet's Jobs planned despite the decoys",
    )
    domains = [d for _, d in [*first.values(), *second.values()]]
    assert sorted(domains) == POOLS
    # The first JobSet's Jobs were never deleted (same UIDs, same domains).
    assert planned_jobs(sim_pods, "first") == first
    assert "shares its planned domain" not in harness.log()
