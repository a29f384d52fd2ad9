"""Answers byte for byte as kube-apiserver writes them.

The expected bodies are kube-apiserver's encoding of these answers, written down here:
`metav1.Status` is encoded by Go's `encoding/json` (`json.Encoder.Encode`) in its struct's
field order (kind, apiVersion, metadata, status, message, reason, details, code), with the
HTML-safe escapes (`<` as `\\u003c`) and a newline after every body; the 404 of a path nothing
serves comes from `NewNotFound` of an empty resource, so its `details` is `{}`. They were
derived from kube-apiserver's code (v1.32), not captured from a running cluster (none can
run here).
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kubesim.cluster import SimCluster

NOT_FOUND_PATH = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"the server could not find the requested resource","reason":"NotFound",'
    b'"details":{},"code":404}\n'
)


async def _request(
    cluster: SimCluster, method: str, path: str, body: Any = None
) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {cluster.token}", "Accept": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{cluster.url}{path}", headers=headers, json=body) as resp,
    ):
        return resp.status, await resp.read()


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "expected"),
    [
        pytest.param("GET", "/apis/nothing.example.com/v1", None, 404, NOT_FOUND_PATH, id="group"),
        pytest.param("GET", "/api/v1/widgets", None, 404, NOT_FOUND_PATH, id="resource"),
        pytest.param("GET", "/nowhere", None, 404, NOT_FOUND_PATH, id="path"),
        pytest.param(
            "GET",
            "/api/v1/namespaces/default/configmaps/missing",
            None,
            404,
            b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            b'"message":"configmaps \\"missing\\" not found","reason":"NotFound",'
            b'"details":{"name":"missing","kind":"configmaps"},"code":404}\n',
            id="object",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces",
            {"metadata": {"name": "default"}},
            409,
            b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            b'"message":"namespaces \\"default\\" already exists","reason":"AlreadyExists",'
            b'"details":{"name":"default","kind":"namespaces"},"code":409}\n',
            id="already-exists",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "c"}, "data": {"..": "x"}},
            422,
            b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            b'"message":"ConfigMap \\"c\\" is invalid: data[..]: Invalid value: \\"..\\": '
            b'must not be \'..\'","reason":"Invalid","details":{"name":"c",'
            b'"kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid",'
            b'"message":"Invalid value: \\"..\\": must not be \'..\'","field":"data[..]"}]},'
            b'"code":422}\n',
            id="invalid",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/default/secrets",
            {"metadata": {"name": "s"}, "data": {"k": "YQ="}},
            400,
            b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            b'"message":"Secret in version \\"v1\\" cannot be handled as a Secret: '
            b'illegal base64 data at input byte 3","reason":"BadRequest","code":400}\n',
            id="bad-request",
        ),
    ],
)
async def test_status_bodies_match_kube_apiserver(
    plain_cluster: SimCluster, method: str, path: str, body: Any, code: int, expected: bytes
) -> None:
    assert await _request(plain_cluster, method, path, body) == (code, expected)


async def test_success_bodies_end_with_a_newline_and_escape_html(
    plain_cluster: SimCluster,
) -> None:
    cm = {"metadata": {"name": "html"}, "data": {"k": "<a & b>"}}
    status, created = await _request(
        plain_cluster, "POST", "/api/v1/namespaces/default/configmaps", cm
    )
    assert status == 201 and created.endswith(b"}\n")
    assert b'"data":{"k":"\\u003ca \\u0026 b\\u003e"}' in created
    for path in ("/api/v1/namespaces/default/configmaps/html", "/api/v1/namespaces", "/api"):
        status, body = await _request(plain_cluster, "GET", path)
        assert status == 200 and body.endswith(b"}\n") and not body.endswith(b"\n\n"), path


@pytest.mark.parametrize(
    ("field", "value", "go_type"),
    [
        pytest.param("apiVersion", ["v1"], "array", id="apiVersion-array"),
        pytest.param("kind", {"a": 1}, "object", id="kind-object"),
        pytest.param("apiVersion", 1, "number", id="apiVersion-number"),
    ],
)
async def test_type_meta_of_the_wrong_type_is_a_bad_request(
    plain_cluster: SimCluster, field: str, value: Any, go_type: str
) -> None:
    body = {"metadata": {"name": "x"}, field: value}
    code, answer = await _request(
        plain_cluster, "POST", "/api/v1/namespaces/default/configmaps", body
    )
    assert code == 400
    assert (
        b"couldn't get version/kind; json parse error: json: cannot unmarshal "
        + go_type.encode()
        + b" into Go struct field ."
        + field.encode()
        + b" of type string"
    ) in answer
