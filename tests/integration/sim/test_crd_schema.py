"""CRD structural schemas enforced by the simulated API server: defaults, enums, CEL, pruning."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.cluster import SimCluster, SimOptions

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainings.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "trainings", "singular": "training", "kind": "Training"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.workers >= self.leaders",
                                        "message": "workers must be at least leaders",
                                    }
                                ],
                                "properties": {
                                    "leaders": {"type": "integer", "default": 1, "minimum": 0},
                                    "workers": {"type": "integer", "default": 4, "maximum": 1000},
                                    "policy": {
                                        "type": "string",
                                        "enum": ["All", "Any"],
                                        "default": "All",
                                    },
                                    "image": {
                                        "type": "string",
                                        "x-kubernetes-validations": [
                                            {
                                                "rule": "self == oldSelf",
                                                "message": "image is immutable",
                                            }
                                        ],
                                    },
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
async def custom(tmp_path: Path) -> AsyncIterator[client.CustomObjectsApi]:
    sim = SimCluster(SimOptions(kubeconfig=str(tmp_path / "kc"), sim_level="none"))
    await sim.start()
    cfg = client.Configuration()
    await config.load_kube_config(config_file=sim.kubeconfig, client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        await client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
        yield client.CustomObjectsApi(api)
    await sim.stop()


def _training(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Training",
        "metadata": {"name": name},
        "spec": spec,
    }


async def _create(api: client.CustomObjectsApi, body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await api.create_namespaced_custom_object(
        "example.com", "v1", "default", "trainings", body
    )
    return result


async def test_defaults_applied_and_unknown_fields_pruned(custom: client.CustomObjectsApi) -> None:
    body = _training("a", image="trainer:1", bogus="dropped", extra={"free": {"form": True}})
    got = await _create(custom, body)
    assert got["spec"] == {
        "leaders": 1,
        "workers": 4,
        "policy": "All",
        "image": "trainer:1",
        "extra": {"free": {"form": True}},
    }


async def test_enum_violation_is_invalid_with_field_path(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as err:
        await _create(custom, _training("b", policy="Some"))
    status = json.loads(err.value.body)
    assert err.value.status == 422 and status["reason"] == "Invalid"
    causes = status["details"]["causes"]
    assert any(
        c["field"] == "spec.policy" and c["reason"] == "FieldValueNotSupported" for c in causes
    )


async def test_maximum_and_cel_rule(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as err:
        await _create(custom, _training("c", workers=5000))
    assert err.value.status == 422 and "spec.workers" in str(err.value.body)
    with pytest.raises(ApiException) as cel:
        await _create(custom, _training("d", leaders=3, workers=2))
    assert cel.value.status == 422 and "workers must be at least leaders" in str(cel.value.body)


async def test_transition_rule_with_old_self(custom: client.CustomObjectsApi) -> None:
    await _create(custom, _training("e", image="trainer:1"))
    with pytest.raises(ApiException) as err:
        await custom.patch_namespaced_custom_object(
            "example.com",
            "v1",
            "default",
            "trainings",
            "e",
            {"spec": {"image": "trainer:2"}},
            # The generated client takes `_content_type` through **kwargs; its types omit it.
            _content_type="application/merge-patch+json",  # type: ignore[call-arg]
        )
    assert err.value.status == 422 and "image is immutable" in str(err.value.body)
    ok = await custom.patch_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "trainings",
        "e",
        {"spec": {"workers": 8}},
        _content_type="application/merge-patch+json",  # type: ignore[call-arg]
    )
    assert ok["spec"]["workers"] == 8 and ok["spec"]["image"] == "trainer:1"
