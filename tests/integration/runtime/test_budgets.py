"""Each concern of the controller process has its own API budget (docs/reliability.md, "Threat model").

Reconciles, leader election, webhooks, events and metrics authentication used to share one
token bucket: a tenant's flood (a dry-run JobSet naming 2,500 claims, 1,000 scrapes with
random tokens) could delay a lease renewal past its deadline, or another tenant's Jobs.
These run against a real `jobset sim`; the budgets they exhaust are the real buckets.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from typing import Any

import pytest

from jobset.runtime.authn import DelegatingAuth, User
from jobset.runtime.client import LEASES, Client
from jobset.runtime.manager import Manager
from jobset.runtime.metrics import RuntimeMetrics
from jobset.runtime.options import ManagerOptions
from jobset.webhooks.jobset_webhook import MAX_PVC_GETS, JobSetWebhook
from jobset.webhooks.review import AdmissionRequest
from kubesim.process import SimProcess

pytestmark = pytest.mark.timeout(120)


async def served(client: Client) -> dict[tuple[str, str], int]:
    counts = (await client.request("GET", "/debug/requests"))["requests"]
    return {(r["verb"], r["resource"]): r["count"] for r in counts}


async def test_lease_is_renewed_while_the_reconcile_budget_is_exhausted(
    sim_none: SimProcess,
) -> None:
    options = ManagerOptions(
        kubeconfig=str(sim_none.kubeconfig),
        qps=1.0,
        burst=1,
        metrics_port=None,
        health_port=None,
        leader_elect=True,
        leader_election_id="budget-test",
        leader_election_namespace="default",
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
    )
    manager = await Manager.create(options)
    task = asyncio.create_task(manager.run())
    try:
        for _ in range(200):
            if manager.elector is not None and manager.elector.state == "leading":
                break
            await asyncio.sleep(0.05)
        assert manager.elector is not None and manager.elector.state == "leading"
        # Two minutes of reconcile traffic queued at 1 qps: what a flood of work looks like.
        for _ in range(120):
            manager.client.limiter.reserve()
        lease = await manager.client_for("leader-election").get(LEASES, "budget-test", "default")
        before = lease["spec"]["renewTime"]
        await asyncio.sleep(2 * options.lease_duration)  # longer than the lease lasts
        assert manager.elector.state == "leading", "the lease was lost to reconcile traffic"
        assert not task.done()
        lease = await manager.client_for("leader-election").get(LEASES, "budget-test", "default")
        assert lease["spec"]["renewTime"] != before
    finally:
        manager.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)


def _jobset_with_claims(n: int) -> dict[str, Any]:
    templates = [
        {"metadata": {"name": f"claim{i}"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
        for i in range(n)
    ]
    pod = {"containers": [{"name": "c", "image": "busybox"}]}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "claims", "namespace": "default"},
        "spec": {
            "replicatedJobs": [
                {"name": "w", "replicas": 1, "template": {"spec": {"template": {"spec": pod}}}}
            ],
            "volumeClaimPolicies": [{"templates": templates}],
        },
    }


def _create_request(js: dict[str, Any]) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u",
        operation="CREATE",
        kind={"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        namespace="default",
        name="claims",
        object=js,
        old_object=None,
        dry_run=True,
        # PVCs are looked up only for a requester who may read them (no PVC oracle).
        user=User("admin", groups=("system:masters", "system:authenticated")),
    )


@pytest.mark.parametrize(
    ("claims", "gets", "lists"),
    [(3, 3, 0), (50, 0, 1)],
    ids=["few claims: one GET each", "many claims: one LIST"],
)
async def test_webhook_pvc_lookups_are_bounded(
    sim_none: SimProcess, claims: int, gets: int, lists: int
) -> None:
    assert MAX_PVC_GETS < 50
    client = await Client.connect(str(sim_none.kubeconfig), qps=500, burst=1000)
    try:
        js = _jobset_with_claims(claims)
        # The same claim template twice is one lookup.
        js["spec"]["volumeClaimPolicies"].append(js["spec"]["volumeClaimPolicies"][0])
        before = await served(client)
        await JobSetWebhook(client).validate(_create_request(js))
        after = await served(client)
        key_get, key_list = ("get", "persistentvolumeclaims"), ("list", "persistentvolumeclaims")
        assert after.get(key_get, 0) - before.get(key_get, 0) == gets
        assert after.get(key_list, 0) - before.get(key_list, 0) == lists
        key_review = ("create", "subjectaccessreviews")
        assert after.get(key_review, 0) - before.get(key_review, 0) == 1
    finally:
        await client.close()


async def test_metrics_auth_bounds_reviews_in_flight(sim_none: SimProcess) -> None:
    client = await Client.connect(
        str(sim_none.kubeconfig), qps=500, burst=1000, metrics=RuntimeMetrics()
    )
    try:
        auth = DelegatingAuth(client, max_in_flight=4)
        before = await served(client)
        headers = [{"Authorization": f"Bearer {secrets.token_hex(16)}"} for _ in range(40)]
        decisions = await asyncio.gather(*(auth.check(h, "GET", "/metrics") for h in headers))
        after = await served(client)
        codes = sorted(d.status for d in decisions)
        assert codes.count(401) == 4 and codes.count(429) == 36, codes
        reviews = after.get(("create", "tokenreviews"), 0) - before.get(
            ("create", "tokenreviews"), 0
        )
        assert reviews == 4  # the 429s cost no API call
    finally:
        await client.close()


async def test_concerns_have_separate_buckets_over_one_pool(sim_none: SimProcess) -> None:
    manager = await Manager.create(
        ManagerOptions(kubeconfig=str(sim_none.kubeconfig), qps=1.0, burst=1)
    )
    try:
        concerns = ["leader-election", "webhooks", "events", "metrics-auth"]
        buckets = {id(manager.client.limiter)} | {
            id(manager.client_for(c).limiter) for c in concerns
        }
        assert len(buckets) == len(concerns) + 1
        for _ in range(50):
            manager.client_for("webhooks").limiter.reserve()  # the webhook's budget is spent
        assert manager.client.limiter.reserve() == 0.0  # the reconciles' is untouched
        assert manager.client_for("events").limiter.reserve() == 0.0
        assert all(manager.client_for(c).api is manager.client.api for c in concerns)
    finally:
        for c in manager.clients.values():
            await c.close()  # derived clients do not close the shared pool...
        assert not manager.client.api.rest_client.pool_manager.closed
        await manager.client.close()
