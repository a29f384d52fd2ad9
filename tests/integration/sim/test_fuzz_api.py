"""The simulated API server fuzzed with schemathesis from its own OpenAPI v3 documents.

A real `jobset sim --sim-level none` with the JobSet CRD; the documents of `api/v1`,
`apis/batch/v1`, `apis/coordination.k8s.io/v1` and `apis/jobset.x-k8s.io/v1alpha2` as the
server serves them at `/openapi/v3/<group-version>`; every operation gets a bounded number of
generated requests, valid ones (bodies from the schema) and invalid ones (wrong types, missing
fields, non-objects), over HTTPS with the kubeconfig's bearer token and CA. Checks:

- no response is a 5xx, and none takes longer than `REQUEST_TIMEOUT` (a hang);
- every non-2xx answer is a `Status` (`apiVersion: v1`, `status: Failure`, `code` equal to the
  HTTP status, a `reason`);
- the server process is alive and healthy at the end;
- the store matches what was acknowledged: every 2xx create, update, patch and delete is
  recorded per object, then each resource is listed in each test namespace and the names and
  resourceVersions compared with the record.

Excluded, and why:

- Cluster-scoped paths (namespaces, nodes, persistentvolumes, ...): deleting or rewriting the
  namespaces or nodes would wipe the cluster the test relies on. Only the namespaced paths run,
  with `{namespace}` one of the test's own namespaces (`NAMESPACES`).
- Watches and deletecollection: not in the documents (a list is never a stream there, and a
  collection delete would empty the namespace the record is compared against).
- Subresources (`status`, `scale`, `log`, `binding`, ...): not in the documents either.

What other writers do is allowed for in the comparison, and only that: the garbage collector
may delete an object whose (generated) ownerReferences name no existing owner, or finish a
deletion held only by its own finalizers (`orphan`, `foregroundDeletion`); the endpoints
controller writes the Endpoints of a Service.

`make test` runs `EXAMPLES` cases per operation and generation mode (about a minute);
`make soak` runs `SOAK_EXAMPLES`.
"""

from __future__ import annotations

import base64
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from kubesim.process import SimProcess
from tests.sims import start_sim_none

GROUP_VERSIONS = (
    "api/v1",
    "apis/batch/v1",
    "apis/coordination.k8s.io/v1",
    "apis/jobset.x-k8s.io/v1alpha2",
)
NAMESPACES = ("fuzz-a", "fuzz-b")
# A few fixed names next to generated ones, so that creates, reads, updates and deletes
# meet the same objects.
NAMES = ("fz-0", "fz-1", "fz-2")
LATE_NAMES = ("fz-3", "fz-4")
EXAMPLES = 6
SOAK_EXAMPLES = 60
REQUEST_TIMEOUT = 10.0
# The built-in types' schemas are open (kubectl knows them), so generated bodies are mostly
# arbitrary objects the server rejects; a share of the writes gets the object's apiVersion,
# kind, a fixed name and a valid spec on top of the generated fields instead, to reach
# validation, storage and the record.
_CONTAINERS = [{"name": "c", "image": "busybox"}]
_POD_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": _CONTAINERS}}
SPECS: dict[str, dict[str, Any]] = {
    "pods": {"spec": {"containers": _CONTAINERS}},
    "services": {"spec": {"ports": [{"port": 80}]}},
    "jobs": {"spec": {"template": _POD_TEMPLATE}},
    "cronjobs": {
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": _POD_TEMPLATE}}}
    },
    "leases": {"spec": {"holderIdentity": "fuzz", "leaseDurationSeconds": 15}},
    "jobsets": {
        "spec": {
            "replicatedJobs": [
                {"name": "w", "replicas": 1, "template": {"spec": {"template": _POD_TEMPLATE}}}
            ]
        }
    },
}
WRITES = ("POST", "PUT", "PATCH", "DELETE")
# Finalizers the garbage collector removes itself.
GC_FINALIZERS = {"orphan", "foregroundDeletion"}


@dataclass
class Client:
    url: str
    session: requests.Session
    ca: str

    def get(self, path: str) -> requests.Response:
        return self.session.get(self.url + path, verify=self.ca, timeout=REQUEST_TIMEOUT)

    def post(self, path: str, body: Any) -> requests.Response:
        return self.session.post(
            self.url + path, json=body, verify=self.ca, timeout=REQUEST_TIMEOUT
        )


def _client(sim: SimProcess, ca_file: Path) -> Client:
    config = yaml.safe_load(sim.kubeconfig.read_text())
    ca_file.write_bytes(
        base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    )
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE would replace the cluster's CA
    session.headers["Authorization"] = f"Bearer {config['users'][0]['user']['token']}"
    return Client(sim.url, session, str(ca_file))


@pytest.fixture(scope="module")
def fuzz_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimProcess, Client]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    sim = start_sim_none(tmp, jobset_crd=True)
    try:
        client = _client(sim, tmp / "ca.crt")
        for ns in NAMESPACES:
            resp = client.post(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            )
            assert resp.status_code == 201, resp.text
        yield sim, client
    finally:
        sim.stop()


# ----------------------------------------------------------------------------- the record

Key = tuple[str, str, str, str]  # group-version path, plural, namespace, name


@dataclass
class Record:
    """What the server acknowledged, per object: its last state (None: deleted)."""

    objects: dict[Key, dict[str, Any] | None] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    sent: int = 0

    def acknowledge(self, gv: str, plural: str, method: str, obj: Any, status: int) -> None:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict) or not meta.get("name"):
            self.problems.append(f"{method} {gv}/{plural}: {status} without an object: {obj}")
            return
        key = (gv, plural, str(meta.get("namespace", "")), str(meta["name"]))
        gone = method == "DELETE" and status == 200
        # An update that drops the last finalizer of an object being deleted removes it.
        gone = gone or bool(meta.get("deletionTimestamp") and not meta.get("finalizers"))
        self.objects[key] = None if gone else obj


def _resource_of(path: str) -> tuple[str, str]:
    """(`api/v1`, `pods`) for `/api/v1/namespaces/{namespace}/pods/{name}`."""
    head, _, rest = path.partition("/namespaces/{namespace}/")
    return head.strip("/"), rest.split("/")[0]


def _dry_run(query: dict[str, Any] | None) -> bool:
    value = (query or {}).get("dryRun")
    values = value if isinstance(value, list) else [value]
    return "All" in [str(v) for v in values]


def _check_status(record: Record, what: str, resp: requests.Response) -> None:
    """A non-2xx answer must be a Kubernetes Status whose code is the HTTP status."""
    try:
        body = resp.json()
    except ValueError:
        record.problems.append(f"{what}: {resp.status_code} is not JSON: {resp.text[:300]}")
        return
    ok = (
        isinstance(body, dict)
        and body.get("kind") == "Status"
        and body.get("apiVersion") == "v1"
        and body.get("status") == "Failure"
        and body.get("code") == resp.status_code
        and isinstance(body.get("reason"), str)
        and body["reason"] != ""
    )
    if not ok:
        record.problems.append(f"{what}: {resp.status_code} is not a Status: {resp.text[:300]}")


# ----------------------------------------------------------------------------- the run


def _operations(client: Client) -> list[Any]:
    ops = []
    for gv in GROUP_VERSIONS:
        resp = client.get(f"/openapi/v3/{gv}")
        assert resp.status_code == 200, resp.text
        schema = schemathesis.openapi.from_dict(resp.json()).include(
            path_regex=r"/namespaces/\{namespace\}/"
        )
        for result in schema.get_all_operations():
            ops.append(result.ok())
    return ops


def _fuzz_operation(
    op: Any,
    mode: GenerationMode,
    examples: int,
    client: Client,
    record: Record,
    derandomize: bool,
    fixed: tuple[str, ...] = NAMES,
) -> None:
    gv, plural = _resource_of(op.path)
    gvk = op.definition.raw["x-kubernetes-group-version-kind"]
    api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
    names = st.one_of(st.sampled_from(fixed), st.text(min_size=1, max_size=30))

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=op.as_strategy(generation_mode=mode),
        namespace=st.sampled_from(NAMESPACES),
        name=names,
        name_in_body=st.sampled_from([*fixed, None]),
        templated=st.booleans(),
    )
    def run(
        case: Any, namespace: str, name: str, name_in_body: str | None, templated: bool
    ) -> None:
        params = dict(case.path_parameters or {})
        if "namespace" in params:
            params["namespace"] = namespace
        if "name" in params and mode == GenerationMode.POSITIVE:
            params["name"] = quote(name_in_body or name, safe="")
        case.path_parameters = params
        body = case.body
        if templated and mode == GenerationMode.POSITIVE and op.method.upper() in ("POST", "PUT"):
            meta = body.get("metadata") if isinstance(body, dict) else None
            meta = {**meta} if isinstance(meta, dict) else {}
            meta["name"] = name_in_body or fixed[0]
            if op.method.upper() == "PUT":
                meta["name"] = name_in_body or name
                meta.pop("resourceVersion", None)
            case.body = {
                **(body if isinstance(body, dict) else {}),
                **SPECS.get(plural, {}),
                "apiVersion": api_version,
                "kind": gvk["kind"],
                "metadata": meta,
            }
        elif name_in_body and isinstance(body, dict) and isinstance(body.get("metadata"), dict):
            body["metadata"]["name"] = name_in_body
        what = f"{op.method.upper()} {op.path} {params} {str(case.query)[:200]}"
        record.sent += 1
        try:
            resp = case.call(
                base_url=client.url,
                session=client.session,
                verify=client.ca,
                timeout=REQUEST_TIMEOUT,
            )
        except requests.Timeout:
            record.problems.append(f"{what}: no answer within {REQUEST_TIMEOUT} s")
            return
        except requests.ConnectionError as exc:
            record.problems.append(f"{what}: connection failed: {exc}")
            return
        status = resp.status_code
        record.statuses[status] += 1
        if status >= 500:
            record.problems.append(f"{what}: {status}: {resp.text[:500]}")
        elif not 200 <= status < 300:
            _check_status(record, what, resp)
        elif op.method.upper() in WRITES and not _dry_run(case.query):
            record.acknowledge(gv, plural, op.method.upper(), resp.json(), status)

    run()


def _compare(client: Client, record: Record, ops: list[Any], before: dict[Key, str]) -> None:
    """Each resource listed in each test namespace against the record."""
    resources = sorted({_resource_of(op.path) for op in ops})
    services = {k[2:] for k, v in record.objects.items() if k[1] == "services" and v}
    for gv, plural in resources:
        for ns in NAMESPACES:
            resp = client.get(f"/{gv}/namespaces/{ns}/{plural}")
            assert resp.status_code == 200, resp.text
            listed = {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in resp.json()["items"]
            }
            for name, rv in listed.items():
                key = (gv, plural, ns, name)
                if plural == "endpoints" and (ns, name) in services:
                    continue  # the endpoints controller's
                if key in record.objects:
                    continue
                if before.get(key) != rv:
                    record.problems.append(f"{key} listed (rv {rv}) but never acknowledged")
            for key, obj in record.objects.items():
                if key[:3] != (gv, plural, ns):
                    continue
                name = key[3]
                if plural == "endpoints" and (ns, name) in services:
                    continue
                if obj is None:
                    if name in listed:
                        record.problems.append(f"{key} deleted but still listed")
                    continue
                meta = obj["metadata"]
                if meta.get("ownerReferences"):
                    continue  # the garbage collector may delete or update it
                if meta.get("deletionTimestamp") and set(meta.get("finalizers") or []) & (
                    GC_FINALIZERS
                ):
                    continue  # the garbage collector finishes the deletion
                if name not in listed:
                    record.problems.append(f"{key} acknowledged but not listed")
                elif listed[name] != meta["resourceVersion"]:
                    record.problems.append(
                        f"{key} acknowledged at rv {meta['resourceVersion']}, "
                        f"listed at {listed[name]}"
                    )


def _snapshot(client: Client, ops: list[Any]) -> dict[Key, str]:
    out: dict[Key, str] = {}
    for gv, plural in sorted({_resource_of(op.path) for op in ops}):
        for ns in NAMESPACES:
            resp = client.get(f"/{gv}/namespaces/{quote(ns)}/{plural}")
            assert resp.status_code == 200, resp.text
            for o in resp.json()["items"]:
                out[(gv, plural, ns, o["metadata"]["name"])] = o["metadata"]["resourceVersion"]
    return out


def _can_be_invalid(op: Any) -> bool:
    """Whether the operation has anything to make invalid: a body, or a parameter that is not
    a free-form string (a GET of one object has only its path's strings)."""
    raw = op.definition.raw
    params = raw.get("parameters") or []
    return "requestBody" in raw or any(p["schema"].get("type") != "string" for p in params)


def fuzz(sim: SimProcess, client: Client, examples: int, derandomize: bool) -> Record:
    ops = _operations(client)
    resources = {_resource_of(op.path) for op in ops}
    assert {
        ("api/v1", "pods"),
        ("api/v1", "configmaps"),
        ("apis/batch/v1", "jobs"),
        ("apis/coordination.k8s.io/v1", "leases"),
        ("apis/jobset.x-k8s.io/v1alpha2", "jobsets"),
    } <= resources, resources
    before = _snapshot(client, ops)
    record = Record()
    started = time.monotonic()
    for op in ops:
        _fuzz_operation(op, GenerationMode.POSITIVE, examples, client, record, derandomize)
        if _can_be_invalid(op):
            _fuzz_operation(op, GenerationMode.NEGATIVE, examples, client, record, derandomize)
    # The deletes came after the creates of each resource: creates again, of other names, so
    # that objects are left for the comparison as well as deletions.
    for op in ops:
        if op.method.upper() == "POST":
            _fuzz_operation(
                op, GenerationMode.POSITIVE, examples, client, record, derandomize, LATE_NAMES
            )
    elapsed = time.monotonic() - started
    time.sleep(1)  # the garbage collector's pending deletions
    _compare(client, record, ops, before)
    assert sim.proc.poll() is None, "".join(sim.output[-50:])
    assert client.get("/healthz").status_code == 200
    print(
        f"\nfuzz: {record.sent} requests to {len(ops)} operations in {elapsed:.0f} s, "
        f"statuses {dict(sorted(record.statuses.items()))}, "
        f"{sum(1 for v in record.objects.values() if v)} objects acknowledged"
    )
    return record


def test_fuzzed_requests_get_a_status_or_success_and_the_store_matches(
    fuzz_sim: tuple[SimProcess, Client],
) -> None:
    record = fuzz(*fuzz_sim, EXAMPLES, derandomize=True)
    assert not record.problems, "\n".join(record.problems[:40])
    # The comparison had objects to check (whether the examples also deleted one depends on
    # the order the server answered them in, so deleted ones are checked when there are any).
    assert any(record.objects.values()), record.objects
    assert record.statuses and not any(s >= 500 for s in record.statuses)


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_fuzz_soak(fuzz_sim: tuple[SimProcess, Client]) -> None:
    record = fuzz(*fuzz_sim, SOAK_EXAMPLES, derandomize=False)
    assert not record.problems, "\n".join(record.problems[:40])


# ------------------------------------------------------------- what the fuzzer found (fixed)


def _status(resp: requests.Response, code: int, reason: str) -> dict[str, Any]:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert (body["kind"], body["apiVersion"], body["status"]) == ("Status", "v1", "Failure")
    assert (body["code"], body["reason"]) == (code, reason), body
    return dict(body)


@pytest.mark.parametrize("body", [[], "x", 1.5, True, ["a"]])
def test_a_delete_body_that_is_no_object_is_a_bad_request(
    fuzz_sim: tuple[SimProcess, Client], body: Any
) -> None:
    """Found by the fuzzer: a JSON array, string, number or bool as DeleteOptions was a 500."""
    _, client = fuzz_sim
    path = "/api/v1/namespaces/fuzz-a/configmaps/fz-regression"
    resp = client.session.delete(client.url + path, json=body, verify=client.ca, timeout=10)
    assert "DeleteOptions" in _status(resp, 400, "BadRequest")["message"]


@pytest.mark.parametrize(
    "query", ["gracePeriodSeconds=abc", "gracePeriodSeconds=1.5", "gracePeriodSeconds=1e400"]
)
def test_a_grace_period_that_is_no_int64_is_a_bad_request(
    fuzz_sim: tuple[SimProcess, Client], query: str
) -> None:
    """Found by the fuzzer: `gracePeriodSeconds` that int() refused was a 500; one past int64
    is refused as kube-apiserver's strconv.ParseInt refuses it."""
    _, client = fuzz_sim
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fz-grace"}}
    client.post("/api/v1/namespaces/fuzz-a/configmaps", cm)
    path = f"/api/v1/namespaces/fuzz-a/configmaps/fz-grace?{query}"
    resp = client.session.delete(client.url + path, verify=client.ca, timeout=10)
    assert "gracePeriodSeconds" in _status(resp, 400, "BadRequest")["message"]
    huge = f"/api/v1/namespaces/fuzz-a/configmaps/fz-grace?gracePeriodSeconds={2**63}"
    resp = client.session.delete(client.url + huge, verify=client.ca, timeout=10)
    assert "out of range" in _status(resp, 400, "BadRequest")["message"]
    resp = client.session.delete(
        client.url + "/api/v1/namespaces/fuzz-a/configmaps/fz-grace",
        json={"gracePeriodSeconds": "30"},
        verify=client.ca,
        timeout=10,
    )
    _status(resp, 400, "BadRequest")
    ok = client.session.delete(
        client.url + "/api/v1/namespaces/fuzz-a/configmaps/fz-grace?gracePeriodSeconds=0",
        verify=client.ca,
        timeout=10,
    )
    assert ok.status_code == 200, ok.text


def test_a_path_with_a_newline_gets_a_status(fuzz_sim: tuple[SimProcess, Client]) -> None:
    """Found by the fuzzer: a name holding %0A did not match the router's pattern and got
    aiohttp's plain-text 404 instead of a NotFound Status."""
    _, client = fuzz_sim
    resp = client.get("/api/v1/namespaces/fuzz-a/configmaps/a%0Ab")
    assert "not found" in _status(resp, 404, "NotFound")["message"]


def test_an_integer_beyond_int64_in_a_jobset_is_invalid(
    fuzz_sim: tuple[SimProcess, Client],
) -> None:
    """Found by the soak run: replicas 2^63 overflowed celpy's int64 while the CRD's CEL rules'
    values were built, a 500; it is a number past int64 (kube-apiserver decodes a float64), so
    `must be of type integer`, 422."""
    _, client = fuzz_sim
    spec = {
        "replicatedJobs": [{**SPECS["jobsets"]["spec"]["replicatedJobs"][0], "replicas": 2**63}]
    }
    body = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "fz-huge"},
        "spec": spec,
    }
    resp = client.post("/apis/jobset.x-k8s.io/v1alpha2/namespaces/fuzz-a/jobsets", body)
    assert "must be of type integer" in _status(resp, 422, "Invalid")["message"]
