"""The webhook server under malformed input: 1,000 fuzzed requests, then still ready.

Requests go over real HTTPS to the harness process (verified against the CA it stored in
its Secret), to every webhook path. Whatever the body - random bytes, JSON of any shape,
AdmissionReviews with wrongly typed fields, JobSets and Pods with nonsense inside - the
answer must be an HTTP 200 AdmissionReview, with the request's uid when it had a readable
one, and never a 500 (neither as HTTP status nor as the denial's code).
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.request
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobset.api import constants as c
from kubesim.process import SimProcess
from tests.integration.placement.process import HarnessProcess
from tests.logs import traceback_lines

pytestmark = [pytest.mark.timeout(600), pytest.mark.kubectl]

PATHS = [
    c.MUTATING_JOBSET_WEBHOOK_PATH,
    c.VALIDATING_JOBSET_WEBHOOK_PATH,
    c.MUTATING_POD_WEBHOOK_PATH,
    c.VALIDATING_POD_WEBHOOK_PATH,
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


def _jobset_like() -> st.SearchStrategy[Any]:
    rjob = st.fixed_dictionaries(
        {},
        optional={
            "name": json_values,
            "replicas": st.integers() | json_values,
            "template": st.fixed_dictionaries(
                {},
                optional={
                    "spec": json_values
                    | st.fixed_dictionaries(
                        {}, optional={"parallelism": json_values, "template": json_values}
                    )
                },
            ),
            "dependsOn": json_values,
        },
    )
    spec = st.fixed_dictionaries(
        {},
        optional={
            "replicatedJobs": st.lists(rjob, max_size=3) | json_values,
            "network": json_values,
            "successPolicy": json_values,
            "failurePolicy": json_values,
            "coordinator": json_values,
            "managedBy": json_values,
            "volumeClaimPolicies": json_values,
            "suspend": json_values,
        },
    )
    return st.fixed_dictionaries(
        {
            "metadata": st.fixed_dictionaries(
                {}, optional={"name": json_values, "annotations": json_values}
            )
        },
        optional={"spec": spec | json_values},
    )


def _pod_like() -> st.SearchStrategy[Any]:
    annotations = (
        st.dictionaries(
            st.sampled_from(
                [
                    c.JOBSET_NAME_KEY,
                    c.EXCLUSIVE_KEY,
                    c.NODE_SELECTOR_STRATEGY_KEY,
                    c.JOB_COMPLETION_INDEX_ANNOTATION,
                    "placement.jobset.x-k8s.io/strategy",
                ]
            ),
            st.text(max_size=8),
        )
        | json_values
    )
    labels = (
        st.dictionaries(
            st.sampled_from(
                [c.JOBSET_NAME_KEY, c.REPLICATED_JOB_NAME_KEY, c.JOB_INDEX_KEY, c.JOB_KEY]
            ),
            st.text(max_size=8),
        )
        | json_values
    )
    return st.fixed_dictionaries(
        {
            "metadata": st.fixed_dictionaries(
                {}, optional={"annotations": annotations, "labels": labels, "name": json_values}
            )
        },
        optional={
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "priority": json_values,
                    "nodeSelector": json_values,
                    "affinity": json_values,
                    "nodeName": json_values,
                },
            )
            | json_values
        },
    )


reviews = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.sampled_from(["admission.k8s.io/v1", "admission.k8s.io/v1beta1", "v1"])
        | json_values,
        "kind": st.just("AdmissionReview") | json_values,
        "request": st.fixed_dictionaries(
            {},
            optional={
                "uid": st.uuids().map(str) | json_values,
                "operation": st.sampled_from(["CREATE", "UPDATE", "DELETE", "PATCH"]) | json_values,
                "kind": json_values,
                "namespace": st.just("default") | json_values,
                "name": json_values,
                "dryRun": json_values,
                "object": _jobset_like() | _pod_like() | json_values,
                "oldObject": _jobset_like() | json_values,
            },
        )
        | json_values,
    },
)

bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    reviews.map(lambda v: json.dumps(v).encode()),
    reviews.map(lambda v: json.dumps(v).encode()[: max(1, len(json.dumps(v)) // 2)]),
)


class Client:
    """One keep-alive HTTPS connection to the webhook server, reopened when needed."""

    def __init__(self, port: int, ca_pem: bytes) -> None:
        self.port = port
        self.ctx = ssl.create_default_context(cadata=ca_pem.decode())
        self.conn: http.client.HTTPSConnection | None = None
        self.count = 0

    def post(
        self, path: str, body: bytes, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(
                    "localhost", self.port, context=self.ctx, timeout=30
                )
            try:
                self.conn.request("POST", path, body=body, headers={"Content-Type": content_type})
                resp = self.conn.getresponse()
                data = resp.read()
                self.count += 1
                return resp.status, data
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def client(sim_none: SimProcess, harness: HarnessProcess) -> Client:
    secret = json.loads(
        sim_none.kubectl(
            "get", "secret", "-n", "jobset-system", "jobset-webhook-server-cert", "-o", "json"
        ).stdout
    )
    return Client(harness.webhook_port, base64.b64decode(secret["data"]["ca.crt"]))


def check_answer(status: int, data: bytes, body: bytes) -> dict[str, Any]:
    assert status == 200, (status, data[:300])
    review = json.loads(data)
    assert review["apiVersion"].startswith("admission.k8s.io/")
    assert review["kind"] == "AdmissionReview"
    response = review["response"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["code"] != 500, response["status"]
        assert response["status"]["message"]
    try:
        sent = json.loads(body)
        uid = sent["request"]["uid"]
    except (ValueError, KeyError, TypeError):
        uid = None
    if isinstance(uid, str) and uid and response["allowed"]:
        assert response["uid"] == uid
    return response


def readyz(harness: HarnessProcess) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{harness.health_port}/readyz", timeout=10) as r:
        return int(r.status)


@settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(path=st.sampled_from(PATHS), body=bodies)
def test_fuzzed_requests_get_clean_admission_errors(
    client: Client, harness: HarnessProcess, path: str, body: bytes
) -> None:
    status, data = client.post(path, body)
    check_answer(status, data, body)


def test_the_server_is_still_ready_after_fuzzing(client: Client, harness: HarnessProcess) -> None:
    assert client.count >= 1000
    assert readyz(harness) == 200
    assert harness.proc.poll() is None
    assert not traceback_lines(harness.log())


def test_oversized_and_mistyped_requests(client: Client, harness: HarnessProcess) -> None:
    big = (
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":"'
        + b"a" * (8 << 20)
        + b'"}}'
    )
    status, data = client.post(c.VALIDATING_JOBSET_WEBHOOK_PATH, big)
    response = check_answer(status, data, b"")
    assert response["status"]["code"] == 413 and "too large" in response["status"]["message"]
    status, data = client.post(c.VALIDATING_JOBSET_WEBHOOK_PATH, b"{}", "text/plain")
    response = check_answer(status, data, b"")
    assert (
        response["status"]["code"] == 400
        and "expected application/json" in response["status"]["message"]
    )
    status, data = client.post(c.MUTATING_POD_WEBHOOK_PATH, b"")
    assert check_answer(status, data, b"")["status"]["message"] == "request body is empty"
    assert readyz(harness) == 200
