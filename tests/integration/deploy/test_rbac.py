"""The controller's RBAC is exactly what it uses: derived from a recorded run, not guessed.

A real `jobset controller --leader-elect` process talks to `jobset sim --sim-level pods`
through a recording proxy (apirecorder.py) while everything it can write something for
happens:

- webhooks installed as config/webhook installs them (Service pointing the simulated API
  server at the controller's port, both configurations, the empty Secret): the internal
  certificate management fills the Secret and injects the caBundle into both
  configurations; then the serving certificate enters its renewal window and is rotated
  (the Secret is updated);
- /metrics scraped over HTTPS (secure metrics are the default) by a ServiceAccount with a
  token: the controller reviews it (TokenReview) and asks whether it may GET /metrics
  (SubjectAccessReview), with the certificate the internal management issued, verified
  against the Secret's CA for the metrics Service's name;
- JobSets admitted through the webhooks: creation with a headless Service and shared PVCs
  (validation looks the PVCs up first), completion and deletion after its TTL, a restart by
  the failure policy, suspension and resumption of started Jobs (twice, so a repeated event
  is aggregated). Their Jobs carry `spec.managedBy`, so the simulated job controller leaves
  them to the test, which drives their status as envtest would;
- exclusive placement with the affinity strategy on real pods: the leader's node moves to
  another domain (relabelled) after its followers were pinned to the old one, and the pod
  reconciler marks the followers (pods/status) and deletes them;
- lease release at shutdown.

Then, against config/rbac rendered as config/install renders it (the chart has the same
rules: test_kustomize.py compares them):

- every request the controller made is allowed by the rules bound to its ServiceAccount
  (otherwise a real API server answers 403);
- every rule is used by some request, or is required by one (creating children whose
  ownerReference blocks owner deletion needs `update` on the owner's `finalizers`), and
  every name a rule lists in resourceNames is requested under that rule.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.webhooks import certs, manifests
from kubesim.process import SimProcess, start_sim
from tests.integration.deploy.apirecorder import ApiRecorder, RequestAttributes, summarize
from tests.integration.deploy.helpers import (
    CONFIG,
    CRD_FILE,
    Controller,
    apply,
    eventually,
    free_port,
    get_json,
    kustomize,
    scrape_secure,
)
from tests.integration.deploy.rbac import Grant, allowing, allowing_attrs, grants

pytestmark = [pytest.mark.kubectl]

NAMESPACE = "jobset-system"
ACCOUNT = "jobset-controller-manager"
USER_NS = "team-a"
POOL = "cloud.google.com/gke-nodepool"
WEBHOOK_DNS_NAME = f"{manifests.SERVICE}.{NAMESPACE}.svc"

# The Jobs of these JobSets are the test's to drive (spec.managedBy): the simulated job
# controller makes no pods for them and leaves their status alone.
JOBSETS = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: ttl, namespace: team-a}
spec:
  ttlSecondsAfterFinished: 0
  network: {enableDNSHostnames: true}
  volumeClaimPolicies:
    - templates:
        - metadata: {name: ckpt}
          spec:
            accessModes: [ReadWriteOnce]
            resources: {requests: {storage: 1Gi}}
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          managedBy: deploy-test.example.com/manual
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: main
                  image: busybox
                  command: [sleep, "1"]
                  volumeMounts: [{name: ckpt, mountPath: /ckpt}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: restart, namespace: team-a}
spec:
  failurePolicy: {maxRestarts: 2}
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          managedBy: deploy-test.example.com/manual
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "1"]}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pause, namespace: team-a}
spec:
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          managedBy: deploy-test.example.com/manual
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "1"]}]
---
# Exclusive placement, affinity strategy, on real pods: one Job of a leader and a follower.
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: excl
  namespace: team-a
  annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool}
spec:
  network: {enableDNSHostnames: false}
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          parallelism: 2
          completions: 2
          backoffLimit: 10
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "3600"]}]
---
# scheduling.jobset-py.dev/gang: the controller keeps a Workload and PodGroups.
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: gang
  namespace: team-a
  annotations: {scheduling.jobset-py.dev/gang: ReplicatedJob}
spec:
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          managedBy: deploy-test.example.com/manual
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "1"]}]
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RequestAttributes]]:
    tmp = tmp_path_factory.mktemp("rbac")
    sim = start_sim(
        tmp,
        *("--sim-level", "pods", "--time-scale", "0.1", "--nodes", f"pools=4x2,label={POOL}"),
        *("--kube-feature-gates", "GenericWorkload=true,GangScheduling=true"),
    )
    recorder = ApiRecorder(sim.kubeconfig).start()
    controller: Controller | None = None
    try:
        sim.kubectl("create", "namespace", NAMESPACE)
        sim.kubectl("create", "namespace", USER_NS)
        sim.kubectl("create", "-f", str(CRD_FILE))
        sim.kubectl("wait", "--for=condition=Established", "crd/jobsets.jobset.x-k8s.io")
        # The webhooks as `jobset dev` installs them: the simulated API server calls the
        # controller's port on 127.0.0.1 for the Service (TLS still checks the .svc name).
        port = free_port()
        apply(sim, [*manifests.manifests(NAMESPACE, port, f"127.0.0.1:{port}"),
                    manifests.secret(NAMESPACE)])  # fmt: skip
        controller = Controller(
            recorder.write_kubeconfig(tmp / "controller.kubeconfig"),
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
            "--webhook-port",
            str(port),
            "--feature-gates",
            "ElasticReplicas=true",  # the gang JobSet is scaled: its groups are replaced
            log=tmp / "controller.log",
        )
        controller.wait_ready()  # the certificate is served and the caBundle injected
        _scrape(sim, controller.metrics_port)
        _exercise(sim)
        assert "deleting follower pods placed outside" in controller.output()
        assert controller.stop() == 0, controller.output()
        yield recorder.snapshot()
    finally:
        if controller is not None:
            controller.stop()
        recorder.stop()
        sim.stop()


def _scrape(sim: SimProcess, port: int) -> None:
    """A scrape with a ServiceAccount's token: the controller reviews the token and asks
    whether that account may GET /metrics (it may not: no binding, 403)."""
    sim.kubectl("create", "serviceaccount", "scraper", "-n", USER_NS)
    token = sim.kubectl("create", "token", "scraper", "-n", USER_NS).stdout.strip()
    ca = _secret_data(sim)[certs.CA_CERT_KEY]
    metrics_dns = f"{manifests.METRICS_SERVICE}.{NAMESPACE}.svc"
    status, body = scrape_secure(port, token, ca, metrics_dns)
    assert status == 403, body


def _jobs(sim: SimProcess, jobset: str) -> list[dict]:  # type: ignore[type-arg]
    items = get_json(sim, "jobs", "-n", USER_NS, "-l", f"jobset.sigs.k8s.io/jobset-name={jobset}")
    return items["items"]  # type: ignore[no-any-return]


def _set_job_status(sim: SimProcess, name: str, status: str) -> None:
    sim.kubectl(
        "patch", "job", name, "-n", USER_NS, "--subresource=status", "--type=merge",
        "-p", status,
    )  # fmt: skip


def _condition(sim: SimProcess, jobset: str, ctype: str, status: str = "True") -> bool:
    js = get_json(sim, "jobset", jobset, "-n", USER_NS)
    return any(
        cond.get("type") == ctype and cond.get("status") == status
        for cond in (js.get("status") or {}).get("conditions") or []
    )


def _secret_data(sim: SimProcess) -> dict[str, bytes]:
    secret = get_json(sim, "secret", manifests.SECRET, "-n", NAMESPACE)
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def _rotate_certificate(sim: SimProcess) -> None:
    """Put the serving certificate inside its renewal window (it expires in a day, the
    rotator renews 90 days ahead): the controller must issue a new one from the same CA
    and update the Secret. The caBundle stays, so admission keeps working."""
    data = _secret_data(sim)
    cert, key = certs.issue_serving_cert(
        data[certs.CA_CERT_KEY], data[certs.CA_KEY_KEY], [WEBHOOK_DNS_NAME], dt.timedelta(days=1)
    )
    aging = {certs.TLS_CERT_KEY: cert, certs.TLS_KEY_KEY: key}
    sim.kubectl(
        "patch", "secret", manifests.SECRET, "-n", NAMESPACE, "--type=merge",
        "-p", json.dumps({"data": {k: base64.b64encode(v).decode() for k, v in aging.items()}}),
    )  # fmt: skip

    def renewed() -> bool:
        now = _secret_data(sim)
        bundle = certs.CertBundle.from_secret_data(now)
        return (
            bundle is not None
            and now[certs.TLS_CERT_KEY] != cert
            and now[certs.CA_CERT_KEY] == data[certs.CA_CERT_KEY]
            and bundle.problem(WEBHOOK_DNS_NAME) is None
        )

    eventually(renewed)


def _pods(sim: SimProcess, jobset: str) -> list[dict[str, Any]]:
    items = get_json(sim, "pods", "-n", USER_NS, "-l", f"{c.JOBSET_NAME_KEY}={jobset}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _is_leader(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"]["annotations"].get(c.JOB_COMPLETION_INDEX_ANNOTATION) == "0")


def _pinned_follower(sim: SimProcess) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The bound leader of `excl` and its bound follower, pinned to the leader's domain."""
    pods = _pods(sim, "excl")
    leaders = [p for p in pods if _is_leader(p) and p["spec"].get("nodeName")]
    followers = [p for p in pods if not _is_leader(p) and p["spec"].get("nodeName")]
    if len(leaders) != 1 or len(followers) != 1:
        return None
    node = get_json(sim, "node", leaders[0]["spec"]["nodeName"])
    if followers[0]["spec"]["nodeSelector"][POOL] != node["metadata"]["labels"][POOL]:
        return None
    return leaders[0], followers[0]


def _misplace_followers(sim: SimProcess) -> None:
    """The leader's node moves to another domain after its follower was pinned to the old
    one (the state a leader rescheduled after its followers' admission leaves too): the pod
    reconciler must mark the follower ExclusivePlacementViolation and delete it."""
    pinned = eventually(lambda: _pinned_follower(sim))
    assert pinned is not None
    leader, follower = pinned
    sim.kubectl("label", "node", leader["spec"]["nodeName"], f"{POOL}=moved", "--overwrite")
    touches = iter(range(1000))

    def follower_evicted() -> bool:
        # The pod reconciler acts on leader pod events: touch the leader until it has seen
        # the node's new domain (its node and pod caches are separate watches).
        sim.kubectl("annotate", "pod", leader["metadata"]["name"], "-n", USER_NS,
                    f"deploy-test/touch={next(touches)}", "--overwrite")  # fmt: skip
        got = sim.kubectl(
            "get", "pod", follower["metadata"]["name"], "-n", USER_NS, "-o", "json", check=False
        )
        if got.returncode != 0:
            return True  # already gone (the recording shows the pods/status patch before)
        pod = json.loads(got.stdout)
        marked = any(
            x.get("type") == "DisruptionTarget"
            and x.get("reason") == c.EXCLUSIVE_PLACEMENT_VIOLATION_REASON
            for x in (pod.get("status") or {}).get("conditions") or []
        )
        return marked and bool(pod["metadata"].get("deletionTimestamp"))

    eventually(follower_evicted, interval=0.5)


def _exercise(sim: SimProcess) -> None:
    _rotate_certificate(sim)
    apply(sim, JOBSETS)  # through the webhooks, with the renewed certificate
    started = '{"status": {"startTime": "2026-01-01T00:00:00Z", "active": 1}}'
    eventually(lambda: len(_jobs(sim, "ttl")) == 1 and len(_jobs(sim, "pause")) == 2)
    eventually(lambda: get_json(sim, "pvc", "ckpt-ttl", "-n", USER_NS))
    eventually(lambda: get_json(sim, "service", "ttl", "-n", USER_NS))

    # Completion, then deletion once ttlSecondsAfterFinished (0) has passed.
    job = _jobs(sim, "ttl")[0]["metadata"]["name"]
    _set_job_status(
        sim,
        job,
        '{"status": {"startTime": "2026-01-01T00:00:00Z", "completionTime": '
        '"2026-01-01T00:01:00Z", "succeeded": 1, "conditions": ['
        '{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}}',
    )
    eventually(
        lambda: sim.kubectl("get", "jobset", "ttl", "-n", USER_NS, check=False).returncode != 0
    )

    # A failed Job restarts the JobSet: the old Job is deleted, a new attempt created.
    job = _jobs(sim, "restart")[0]["metadata"]["name"]
    _set_job_status(
        sim,
        job,
        '{"status": {"startTime": "2026-01-01T00:00:00Z", "failed": 1, "conditions": ['
        '{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"}, '
        '{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}}',
    )
    eventually(
        lambda: (
            get_json(sim, "jobset", "restart", "-n", USER_NS).get("status", {}).get("restarts") == 1
        )
    )

    # Suspend and resume started Jobs twice: suspend patches, resume clears startTime through
    # jobs/status first; the second "jobset is suspended" event aggregates into the first.
    for _ in range(2):
        for j in _jobs(sim, "pause"):
            _set_job_status(sim, j["metadata"]["name"], started)
        sim.kubectl("patch", "jobset", "pause", "-n", USER_NS, "--type=merge",
                    "-p", '{"spec": {"suspend": true}}')  # fmt: skip
        eventually(lambda: all(j["spec"].get("suspend") for j in _jobs(sim, "pause")))
        eventually(lambda: _condition(sim, "pause", "Suspended"))
        sim.kubectl("patch", "jobset", "pause", "-n", USER_NS, "--type=merge",
                    "-p", '{"spec": {"suspend": false}}')  # fmt: skip
        eventually(lambda: not any(j["spec"].get("suspend") for j in _jobs(sim, "pause")))
        eventually(lambda: _condition(sim, "pause", "Suspended", "False"))
    eventually(
        lambda: any(
            e.get("count", 1) > 1 and e.get("reason") == "SuspendedJobs"
            for e in get_json(sim, "events", "-n", USER_NS)["items"]
        )
    )

    # Exclusive placement: a follower outside its leader's domain is marked and deleted.
    _misplace_followers(sim)
    _scale_gang(sim)


def _min_counts(sim: SimProcess, what: str) -> list[int]:
    items = get_json(sim, what, "-n", USER_NS)["items"]
    if what == "workloads":
        return [t["schedulingPolicy"]["gang"]["minCount"]
                for w in items for t in w["spec"]["podGroupTemplates"]]  # fmt: skip
    return [pg["spec"]["schedulingPolicy"]["gang"]["minCount"] for pg in items]


def _scale_gang(sim: SimProcess) -> None:
    """A gang JobSet's groups are made, then replaced when its replicas change."""
    eventually(lambda: _min_counts(sim, "podgroups") == [1] and _min_counts(sim, "workloads"))
    sim.kubectl("patch", "jobset", "gang", "-n", USER_NS, "--type=json", "-p",
                '[{"op": "replace", "path": "/spec/replicatedJobs/0/replicas", "value": 2}]')  # fmt: skip
    eventually(
        lambda: _min_counts(sim, "podgroups") == [2] and _min_counts(sim, "workloads") == [2]
    )


def _required(requests: list[RequestAttributes]) -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, namespace) that requests need beyond their own attributes."""
    out: set[tuple[str, str, str, str]] = set()
    for r in requests:
        for api_version, kind in r.blocks_owner_deletion_of:
            if api_version.startswith("jobset.x-k8s.io/") and kind == "JobSet":
                out.add(("jobset.x-k8s.io", "jobsets/finalizers", "update", r.namespace))
            else:
                raise AssertionError(f"unexpected blocking owner {api_version} {kind}")
    return out


def test_every_request_of_the_controller_is_allowed(
    recorded: list[RequestAttributes], tmp_path: Path
) -> None:
    rules = grants(kustomize(CONFIG / "rbac"), NAMESPACE, ACCOUNT)
    resource_requests = [r for r in recorded if r.is_resource]
    assert resource_requests, "the recording is empty"
    denied = [r for r in resource_requests if not allowing(rules, r)]
    assert not denied, "requests the RBAC does not allow:\n" + "\n".join(summarize(denied))
    missing = [
        need
        for need in _required(resource_requests)
        if not allowing_attrs(rules, need[0], need[1], need[2], need[3])
    ]
    assert not missing, f"required by ownerReferences but not allowed: {missing}"
    # Non-resource requests are only the discovery every authenticated user may make.
    assert {r.path for r in recorded if not r.is_resource} <= {"/api", "/apis", "/version"}


def test_every_rule_is_used(recorded: list[RequestAttributes], tmp_path: Path) -> None:
    rules = grants(kustomize(CONFIG / "rbac"), NAMESPACE, ACCOUNT)
    resource_requests = [r for r in recorded if r.is_resource]
    used: set[Grant] = set()
    named: set[tuple[Grant, str]] = set()  # (grant limited by resourceNames, name requested)
    for r in resource_requests:
        for g in allowing(rules, r):
            used.add(g)
            named.add((g, r.name))
    for group, resource, verb, ns in _required(resource_requests):
        used.update(allowing_attrs(rules, group, resource, verb, ns))
    unused = [str(g) for g in sorted(rules - used)]
    # A rule listing several resourceNames must need each of them (least privilege: a name
    # only another resource has belongs in a rule of its own).
    unused += [
        f"{g}: name {name!r} never requested"
        for g in sorted(used)
        for name in g.names
        if (g, name) not in named
    ]
    assert not unused, (
        "rules no request of the controller needs (remove them, or extend the recorded "
        "scenario if the controller does need them):\n"
        + "\n".join(unused)
        + "\n\nrecorded:\n"
        + textwrap.indent("\n".join(summarize(resource_requests)), "  ")
    )
