"""`apiregistration.k8s.io/v1` APIServices: stored, in `/apis` discovery, validated with
kube-apiserver's messages, and their `Available` condition set as the aggregator sets it."""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import pytest

from kubesim.cluster import SimCluster
from kubesim.process import SimProcess
from tests.eventually import eventually

BASE = "/apis/apiregistration.k8s.io/v1/apiservices"


async def _call(cluster: SimCluster, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{cluster.url}{path}", headers=headers, json=body) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


def _apiservice(name: str, group: str, version: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": 100,
            "versionPriority": 10,
            **spec,
        },
    }


def _available(obj: dict[str, Any]) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Available"), {})


async def _condition(cluster: SimCluster, name: str, reason: str) -> dict[str, Any]:
    _, obj = await eventually(
        lambda: _call(cluster, "GET", f"{BASE}/{name}"),
        lambda answer: _available(answer[1]).get("reason") == reason,
        what=f"{name} Available reason {reason}",
    )
    return _available(obj)


async def test_apiservice_is_served_and_reports_availability(plain_cluster: SimCluster) -> None:
    _, groups = await _call(plain_cluster, "GET", "/apis")
    assert "apiregistration.k8s.io" in [g["name"] for g in groups["groups"]]
    service = {"namespace": "default", "name": "metrics"}
    status, created = await _call(
        plain_cluster,
        "POST",
        BASE,
        _apiservice(
            "v1beta1.metrics.example.com", "metrics.example.com", "v1beta1", service=service
        ),
    )
    assert status == 201, created
    assert created["spec"]["service"] == {**service, "port": 443}
    cond = await _condition(plain_cluster, "v1beta1.metrics.example.com", "ServiceNotFound")
    assert (cond["status"], cond["message"]) == (
        "False",
        'service/metrics in "default" is not present',
    )

    svc = {"metadata": {"name": "metrics"}, "spec": {"ports": [{"name": "https", "port": 443}]}}
    assert (await _call(plain_cluster, "POST", "/api/v1/namespaces/default/services", svc))[
        0
    ] == 201
    cond = await _condition(plain_cluster, "v1beta1.metrics.example.com", "EndpointsNotFound")
    assert cond["message"] == 'cannot find endpoints for service/metrics in "default"'

    status, _ = await _call(
        plain_cluster, "POST", BASE, _apiservice("v1.local.example.com", "local.example.com", "v1")
    )
    assert status == 201
    cond = await _condition(plain_cluster, "v1.local.example.com", "Local")
    assert (cond["status"], cond["message"]) == ("True", "Local APIServices are always available")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            _apiservice("metrics", "metrics.example.com", "v1beta1"),
            'metadata.name: Invalid value: "metrics": must be `spec.version+"."+spec.group`: '
            '"v1beta1.metrics.example.com"',
            id="name",
        ),
        pytest.param(
            _apiservice("v1.x.example.com", "x.example.com", "v1", groupPriorityMinimum=0),
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
            id="group-priority",
        ),
        pytest.param(
            _apiservice("v1.x.example.com", "x.example.com", "v1", service={"name": "s"}),
            "spec.service.namespace: Required value",
            id="service-namespace",
        ),
        pytest.param(
            _apiservice("v1.x.example.com", "x.example.com", "v1", caBundle="AAAA"),
            'spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle',
            id="local-ca-bundle",
        ),
    ],
)
async def test_apiservice_validation(
    plain_cluster: SimCluster, body: dict[str, Any], message: str
) -> None:
    status, answer = await _call(plain_cluster, "POST", BASE, body)
    name = body["metadata"]["name"]
    assert (status, answer["message"]) == (
        422,
        f'APIService.apiregistration.k8s.io "{name}" is invalid: {message}',
    )


@pytest.mark.kubectl
def test_kubectl_lists_apiservices_with_availability(sim_none: SimProcess) -> None:
    manifest = (
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\n"
        "metadata: {name: v1.table.example.com}\n"
        "spec: {group: table.example.com, version: v1, groupPriorityMinimum: 100,"
        " versionPriority: 10, service: {namespace: default, name: nothing}}\n"
    )
    assert sim_none.kubectl("apply", "-f", "-", input=manifest).stdout.strip() == (
        "apiservice.apiregistration.k8s.io/v1.table.example.com created"
    )
    for _ in range(200):
        lines = sim_none.kubectl("get", "apiservice", "v1.table.example.com").stdout.splitlines()
        if "ServiceNotFound" in lines[1]:
            break
        time.sleep(0.05)
    assert lines[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert lines[1].split()[:4] == [
        "v1.table.example.com",
        "default/nothing",
        "False",
        "(ServiceNotFound)",
    ]
