"""The JobSet webhook is no PVC oracle (docs/reliability.md, "Threat model").

Validation compares a JobSet's volumeClaimPolicies with the claims that already exist, with
the controller's cluster-wide read. A user who may create JobSets in a namespace but not
read its PVCs used to learn from the denial whether a named claim existed and whether its
spec matched a guess. Now the webhook asks the API server (SubjectAccessReview for the
request's userInfo) and consults claims only for users who may read them; for the others
the answer is the same whether the claim exists or not.

Everything goes through the simulated API server with RBAC enforced: kubectl with a
ServiceAccount token, the webhook chain, the harness' webhook server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubesim.process import SimProcess
from tests import builders
from tests.integration.placement.process import HarnessProcess

pytestmark = [pytest.mark.timeout(180), pytest.mark.kubectl]

NS = "oracle"
PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data-probe", "namespace": NS},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def jobset(storage: str) -> dict[str, Any]:
    mount = {"volumeMounts": [{"name": "data", "mountPath": "/d"}]}
    w = builders.rjob(
        "w",
        parallelism=None,
        indexed=None,
        backoff_limit=None,
        restart_policy=None,
        container="c",
        container_fields=mount,
    )
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}},
    }
    return builders.jobset("probe", w, namespace=NS, volumeClaimPolicies=[{"templates": [claim]}])


def role(name: str, pvcs: bool) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "get"]}
    ]
    if pvcs:
        rules.append({"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get"]})
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": NS},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NS}],
        },
    ]


@pytest.fixture(scope="module")
def tokens(sim_none: SimProcess, harness: HarnessProcess) -> Iterator[dict[str, str]]:
    sim_none.kubectl("create", "namespace", NS)
    objects = [*role("alice", pvcs=False), *role("bob", pvcs=True)]
    sim_none.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    yield {
        who: sim_none.kubectl("create", "token", who, "-n", NS).stdout.strip()
        for who in ("alice", "bob")
    }


def dry_run(sim: SimProcess, token: str, storage: str) -> tuple[int, str]:
    r = sim.kubectl(
        "--token",
        token,
        "create",
        "--dry-run=server",
        "-o",
        "name",
        "-f",
        "-",
        input=json.dumps(jobset(storage)),
        check=False,
    )
    return r.returncode, (r.stdout + r.stderr).strip()


def set_claim(sim: SimProcess, present: bool) -> None:
    if present:
        sim.kubectl("apply", "-f", "-", input=json.dumps(PVC))
    else:
        sim.kubectl("delete", "pvc", "data-probe", "-n", NS, "--ignore-not-found")


def test_a_user_who_cannot_read_claims_learns_nothing_about_them(
    sim_none: SimProcess, tokens: dict[str, str]
) -> None:
    answers = {}
    for present in (True, False):
        set_claim(sim_none, present)
        for storage in ("1Gi", "5Gi"):  # a right and a wrong guess of the claim's spec
            answers[present, storage] = dry_run(sim_none, tokens["alice"], storage)
    assert len(set(answers.values())) == 1, answers
    # ... and the one answer is what a namespace without any claim gets: admitted.
    assert answers[False, "5Gi"] == (0, "jobset.jobset.x-k8s.io/probe")


def test_a_user_who_can_read_claims_still_gets_the_check(
    sim_none: SimProcess, tokens: dict[str, str]
) -> None:
    set_claim(sim_none, True)
    code, out = dry_run(sim_none, tokens["bob"], "5Gi")
    assert code != 0 and f"spec does not match existing PVC data-probe in namespace {NS}" in out
    code, out = dry_run(sim_none, tokens["bob"], "1Gi")
    assert code != 0 and "spec does not match" not in out, out
    assert "retentionPolicy must be retain when PVC exists" in out
    set_claim(sim_none, False)
    code, out = dry_run(sim_none, tokens["bob"], "5Gi")
    assert code == 0, out
