"""Generated JobSets - valid, invalid and absurd - through the real admission path.

The harness process serves the JobSet webhooks (TLS, caBundle injected) and runs the
reconciler; the simulated API server calls the webhooks as kube-apiserver does. Valid
JobSets must be accepted and reconciled (their Jobs created), invalid ones rejected with a
message naming the offending field, and nothing may crash or answer 500.
"""

from __future__ import annotations

import base64
import itertools
import json
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.process import SimProcess, start_sim
from tests.integration.placement.process import HarnessProcess, start_harness
from tests.logs import traceback_lines

pytestmark = pytest.mark.timeout(600)
NS = "default"
ACCEPTED: dict[str, int] = {}
_serial = itertools.count()  # name -> Jobs the controller must create


class Api:
    """Plain HTTPS to the simulated API server with the kubeconfig's CA and token."""

    def __init__(self, kubeconfig: Path) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        self.server = cluster["server"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.ctx = ssl.create_default_context(cadata=ca)
        self.token = cfg["users"][0]["user"]["token"]

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        req = urllib.request.Request(
            self.server + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                return err.code, json.loads(raw)
            except ValueError:
                return err.code, raw.decode(errors="replace")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with tempfile.TemporaryDirectory() as tmp:
        s = start_sim(Path(tmp), "--sim-level", "none")
        yield s
        s.stop()


@pytest.fixture(scope="module")
def harness(sim: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim, "--log-level", "INFO")
    yield h
    h.stop()


@pytest.fixture(scope="module")
def api(sim: SimProcess, harness: HarnessProcess) -> Api:
    return Api(sim.kubeconfig)


dns = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
weird_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40)


@st.composite
def valid_jobsets(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(dns, min_size=1, max_size=3, unique=True))
    rjobs = []
    for n in names:
        par = draw(st.integers(1, 2))
        rjobs.append(
            {
                "name": n,
                "replicas": draw(st.integers(1, 3)),
                "template": {
                    "spec": {
                        "parallelism": par,
                        "completions": par,
                        "template": {
                            "metadata": {"annotations": {"note": draw(weird_text)}},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "c",
                                        "image": "busybox",
                                        "env": [{"name": "U", "value": draw(weird_text)}],
                                    }
                                ]
                            },
                        },
                    }
                },
            }
        )
    spec: dict[str, Any] = {"replicatedJobs": rjobs}
    if draw(st.booleans()):  # unknown fields, deeply nested: pruned by the schema
        deep: Any = "x"
        for _ in range(draw(st.integers(1, 60))):
            deep = {"n": deep}
        spec["unknownField"] = deep
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": f"{draw(dns)}-{next(_serial)}",
            "annotations": {"free-text": draw(weird_text)},
        },
        "spec": spec,
    }


def _set(obj: dict[str, Any], path: list[Any], value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    if value is _DELETE:
        obj.pop(path[-1], None)
    else:
        obj[path[-1]] = value


_DELETE = object()
# (path, bad value, text the rejection must contain: the field it names)
MUTATIONS: list[tuple[list[Any], Any, str]] = [
    (["metadata", "name"], "a" * 63, "name"),
    (["metadata", "name"], "jöb-ünïcode", "metadata.name"),
    (["metadata", "name"], "UPPER", "metadata.name"),
    (["spec", "replicatedJobs", 0, "replicas"], -1, "replicas"),
    (["spec", "replicatedJobs", 0, "replicas"], 2**40, "replicas"),
    (["spec", "replicatedJobs", 0, "replicas"], "three", "replicas"),
    (["spec", "replicatedJobs", 0, "name"], "Bad_Name", "name"),
    (["spec", "replicatedJobs", 0, "template"], _DELETE, "template"),
    (["spec", "network"], {"subdomain": "Not_A_Domain"}, "spec.network.subdomain"),
    (["spec", "managedBy"], "not-a-path", "spec.managedBy"),
    (["spec", "successPolicy"], {"operator": "Sometimes"}, "successPolicy"),
    (["spec", "failurePolicy"], {"maxRestarts": "many"}, "maxRestarts"),
    (["spec", "suspend"], "yes", "suspend"),
    (["spec", "startupPolicy"], {"startupPolicyOrder": "Random"}, "startupPolicyOrder"),
]


def huge_product(js: dict[str, Any]) -> None:
    rj = js["spec"]["replicatedJobs"][0]
    rj["replicas"] = 100_000
    rj["template"]["spec"]["parallelism"] = rj["template"]["spec"]["completions"] = 100_000


def check_rejection(status: int, body: Any, field: str) -> None:
    assert status in (400, 403, 409, 413, 422), (status, body)
    assert isinstance(body, dict) and body.get("kind") == "Status", body
    assert field in body["message"], (field, body["message"])


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    js=valid_jobsets(),
    mutation=st.none() | st.sampled_from(range(len(MUTATIONS) + 2)),
)
def test_generated_jobsets_accepted_or_refused_by_field(
    api: Api, js: dict[str, Any], mutation: int | None
) -> None:
    path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets"
    if mutation is None:
        status, body = api.call("POST", path, json.dumps(js).encode())
        if status == 409 and isinstance(body, dict) and body.get("reason") == "AlreadyExists":
            return
        assert status == 201, (status, body)
        ACCEPTED[js["metadata"]["name"]] = sum(r["replicas"] for r in js["spec"]["replicatedJobs"])
        return
    if mutation == len(MUTATIONS) + 1:
        # Absurd but allowed (as upstream's schema allows it): no replicatedJobs at all.
        js["spec"].pop("replicatedJobs")
        status, body = api.call("POST", path, json.dumps(js).encode())
        assert status == 201, (status, body)
        ACCEPTED[js["metadata"]["name"]] = 0
        return
    if mutation == len(MUTATIONS):
        huge_product(js)
        field = "replicas"
    else:
        where, value, field = MUTATIONS[mutation]
        _set(js, where, value)
    status, body = api.call("POST", path, json.dumps(js).encode())
    check_rejection(status, body, field)


def test_absurd_bodies_are_refused_cleanly(api: Api) -> None:
    path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets"
    deep = "[" * 100_000 + "]" * 100_000
    for body in (deep.encode(), b"\xff\xfe garbage", b'{"kind": "JobSet"'):
        status, answer = api.call("POST", path, body)
        assert 400 <= status < 500, (status, str(answer)[:300])


def test_accepted_jobsets_are_reconciled_and_nothing_crashed(
    api: Api, harness: HarnessProcess
) -> None:
    assert len(ACCEPTED) >= 20, "too few valid JobSets generated"
    deadline = time.monotonic() + 120
    while True:
        status, jobs = api.call("GET", f"/apis/batch/v1/namespaces/{NS}/jobs")
        assert status == 200
        counts: dict[str, int] = {}
        for job in jobs["items"]:
            owner = job["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name", "")
            counts[owner] = counts.get(owner, 0) + 1
        if all(counts.get(n, 0) == want for n, want in ACCEPTED.items()):
            break
        assert time.monotonic() < deadline, {
            n: (counts.get(n, 0), w) for n, w in ACCEPTED.items() if counts.get(n, 0) != w
        }
        time.sleep(0.5)
    assert harness.proc.poll() is None
    with urllib.request.urlopen(f"http://127.0.0.1:{harness.health_port}/readyz", timeout=10) as r:
        assert r.status == 200
    log = harness.log()
    assert not traceback_lines(log), log[-3000:]
