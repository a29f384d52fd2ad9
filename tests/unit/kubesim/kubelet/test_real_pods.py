"""Pure parts of the real-process runtime: image matching, environment, volume files and
mounts, probe counting and scheduling."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from kubesim.kubelet.envvars import ConfigError, container_env, service_env
from kubesim.kubelet.probes import ProbeSpec, ProbeState, next_probe
from kubesim.kubelet.processes import image_repository, parse_run_images
from kubesim.kubelet.volumes import (
    SA_MOUNT_PATH,
    MountError,
    container_mounts,
    publish,
    volume_files,
)

POD: dict[str, Any] = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"app": "x"},
        "annotations": {"a": "1"},
    },
    "spec": {"nodeName": "n1", "serviceAccountName": "sa"},
    "status": {"podIP": "10.244.0.2", "hostIP": "172.18.0.2"},
}
OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("ConfigMap", "ns", "cm"): {"data": {"k": "v", "other": "o"}},
    ("Secret", "ns", "s"): {"data": {"pw": base64.b64encode(b"secret").decode()}},
}


def lookup(kind: str, ns: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((kind, ns, name))


@pytest.mark.parametrize(
    ("image", "repo"),
    [
        ("ghcr.io/x/jobset:v1", "ghcr.io/x/jobset"),
        ("ghcr.io/x/jobset@sha256:abc", "ghcr.io/x/jobset"),
        ("ghcr.io/x/jobset:v1@sha256:abc", "ghcr.io/x/jobset"),
        ("localhost:5000/app:1", "localhost:5000/app"),
        ("busybox", "docker.io/library/busybox"),
        ("user/app:2", "docker.io/user/app"),
    ],
    ids=[
        "ghcr.io/x/jobset:v1",
        "ghcr.io/x/jobset@sha256:abc",
        "ghcr.io/x/jobset:v1@sha256:abc",
        "localhost:5000/app:1",
        "busybox",
        "user/app:2",
    ],
)
def test_image_repository_ignores_tag_and_digest(image: str, repo: str) -> None:
    assert image_repository(image) == repo


def test_parse_run_images(tmp_path: Path) -> None:
    assert parse_run_images([f"ghcr.io/x/jobset={tmp_path}"]) == {"ghcr.io/x/jobset": tmp_path}
    with pytest.raises(ValueError, match="REPOSITORY=DIR"):
        parse_run_images(["nodir"])
    with pytest.raises(ValueError, match="not a directory"):
        parse_run_images([f"a/b={tmp_path / 'missing'}"])


def test_env_order_refs_and_expansion() -> None:
    container = {
        "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "500m"}},
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "k", "value": "from-env"},
            {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "LBL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            {"name": "URL", "value": "https://$(KUBERNETES_SERVICE_HOST):$(IP)/$(NOPE)$$"},
            {
                "name": "OPT",
                "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": True}},
            },
        ],
    }
    env = container_env(POD, container, lookup, service_env("10.244.0.1", 6443))
    assert env["CM_k"] == "v" and env["CM_other"] == "o"
    assert env["k"] == "from-env"
    assert (env["NAME"], env["LBL"], env["UID"], env["SA"]) == ("p", "x", "u-1", "sa")
    assert env["IP"] == "10.244.0.2"
    assert (env["CM"], env["PW"]) == ("v", "secret")
    assert env["MEM"] == "1024"
    assert env["CPU"] == "1"  # 0.5 cores rounded up, as the kubelet does
    assert env["URL"] == "https://10.244.0.1:10.244.0.2/$(NOPE)$"
    assert "OPT" not in env
    assert env["KUBERNETES_SERVICE_HOST"] == "10.244.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "6443"


def test_env_missing_reference_is_a_config_error() -> None:
    container = {
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "no", "key": "k"}}}]
    }
    with pytest.raises(ConfigError, match='configmap "no" not found'):
        container_env(POD, container, lookup)
    container = {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "no"}}}]}
    with pytest.raises(ConfigError, match="couldn't find key no"):
        container_env(POD, container, lookup)


def tokens(ns: str, sa: str, audience: str, seconds: int) -> str:
    return f"token-{ns}-{sa}-{audience}-{seconds}"


def test_volume_files() -> None:
    secret = {"name": "v", "secret": {"secretName": "s", "defaultMode": 0o400}}
    assert volume_files(POD, secret, lookup, tokens) == {"pw": (b"secret", 0o400)}
    items = {
        "name": "v",
        "configMap": {"name": "cm", "items": [{"key": "k", "path": "d/k.txt", "mode": 0o600}]},
    }
    assert volume_files(POD, items, lookup, tokens) == {"d/k.txt": (b"v", 0o600)}
    projected = {
        "name": "v",
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "path": "tok",
                        "audience": "aud",
                        "expirationSeconds": 600,
                    }
                },
                {
                    "downwardAPI": {
                        "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                    }
                },
                {"secret": {"name": "s"}},
            ]
        },
    }
    assert volume_files(POD, projected, lookup, tokens) == {
        "tok": (b"token-ns-sa-aud-600", 0o644),
        "labels": (b'app="x"', 0o644),
        "pw": (b"secret", 0o644),
    }
    assert volume_files(POD, {"name": "e", "emptyDir": {}}, lookup, tokens) is None
    with pytest.raises(MountError, match='secret "gone" not found'):
        volume_files(POD, {"name": "v", "secret": {"secretName": "gone"}}, lookup, tokens)
    assert (
        volume_files(
            POD, {"name": "v", "secret": {"secretName": "gone", "optional": True}}, lookup, tokens
        )
        == {}
    )


def test_container_mounts_are_the_pod_specs_own() -> None:
    """The token volume is the one ServiceAccount admission put in the spec: no second one."""
    volumes = [{"name": "a", "emptyDir": {}}, {"name": "kube-api-access-x2b4z", "projected": {}}]
    pod = {**POD, "spec": {**POD["spec"], "volumes": volumes}}
    given = [
        {"name": "a", "mountPath": "/data/x/"},
        {"name": "kube-api-access-x2b4z", "mountPath": SA_MOUNT_PATH, "readOnly": True},
    ]
    mounts = container_mounts(pod, {"volumeMounts": given})
    assert [(m.volume, m.path, m.read_only) for m in mounts] == [
        ("a", "/data/x", False),
        ("kube-api-access-x2b4z", SA_MOUNT_PATH, True),
    ]
    assert [m.path for m in container_mounts(pod, {})] == []
    with pytest.raises(MountError):
        container_mounts(pod, {"volumeMounts": [{"name": "missing", "mountPath": "/m"}]})


def test_publish_is_atomic_and_idempotent(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert publish(target, {"a": (b"1", 0o644), "d/b": (b"2", 0o600)})
    assert (target / "a").read_bytes() == b"1" and (target / "d" / "b").read_bytes() == b"2"
    assert (target / "a").is_symlink() and (target / "..data").is_symlink()
    assert not publish(target, {"a": (b"1", 0o644), "d/b": (b"2", 0o600)})
    first = (target / "..data").readlink()
    assert publish(target, {"a": (b"3", 0o644)})
    assert (target / "a").read_bytes() == b"3" and not (target / "d").exists()
    assert not (target / first).exists()  # the old generation is gone


def test_probe_thresholds_and_schedule() -> None:
    spec = ProbeSpec(
        "readiness", {}, initial_delay=5, period=2, success_threshold=2, failure_threshold=3
    )
    state = ProbeState(spec, started_at=100.0)
    assert state.due() == 105.0
    assert not state.record(True, 105.0)  # one success of two
    assert state.due() == 107.0
    assert state.record(True, 107.0) and state.verdict is True
    assert not state.record(False, 109.0) and not state.record(False, 111.0)
    assert state.record(False, 113.0) and state.verdict is False
    assert (
        ProbeSpec.of("liveness", {}).period == 10
        and ProbeSpec.of("liveness", {}).failure_threshold == 3
    )


def test_startup_probe_runs_alone_until_it_succeeds() -> None:
    startup = ProbeState(ProbeSpec("startup", {}, period=1), 0.0)
    live = ProbeState(ProbeSpec("liveness", {}, period=1), 0.0)
    ready = ProbeState(ProbeSpec("readiness", {}, initial_delay=3), 0.0)
    assert next_probe([startup, live, ready]) is startup
    startup.record(True, 0.0)
    assert next_probe([startup, live, ready]) is live
