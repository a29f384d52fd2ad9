"""The real-process kubelet never writes outside a pod's own volume directory, whatever a stored
object says, and one bad object does not stop the volume refresh of other pods.

The objects are put into the store directly, past the API's validation (as a store restored
from an old data directory could hold them). The runtime is built without its network and
HTTP parts, which these paths do not use.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, cast

import pytest

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.kubelet import processes
from kubesim.kubelet.processes import ProcessRuntime, Sandbox
from kubesim.kubelet.volumes import MountError, container_mounts, publish
from tests.eventually import eventually


def _runtime() -> ProcessRuntime:
    return ProcessRuntime(ApiCore(Registry(served_types()), Store()), cast(Any, None), {})


def _pod(name: str, volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"automountServiceAccountToken": False, "volumes": volumes, "containers": []},
    }


def _sandbox(tmp: Path, name: str) -> Sandbox:
    directory = tmp / "pods" / name
    (directory / "volumes").mkdir(parents=True)
    return Sandbox(f"uid-{name}", ("ns", name), "n1", directory, cast(Any, None))


def _files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_publish_refuses_a_path_out_of_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "volumes" / "v"
    with pytest.raises(MountError, match="must be a relative path that does not contain"):
        publish(target, {"../../escape": (b"x", 0o644)})
    assert not (tmp_path / "escape").exists()
    assert _files_under(tmp_path) == set()


def test_a_sub_path_out_of_the_volume_is_a_mount_error() -> None:
    pod = _pod("p", [{"name": "v", "emptyDir": {}}])
    container = {"volumeMounts": [{"name": "v", "mountPath": "/data", "subPath": "../../etc"}]}
    with pytest.raises(MountError, match=re.escape("invalid subPath '../../etc'")):
        container_mounts(pod, container)


@pytest.mark.parametrize(
    ("volume", "stored"),
    [
        pytest.param(
            {"name": "../victim", "emptyDir": {}},
            None,
            id="volume-name",
        ),
        pytest.param(
            {"name": "cm", "configMap": {"name": "cm"}},
            {"data": {"../../evil": "x"}},
            id="configmap-key",
        ),
        pytest.param(
            {"name": "cm", "configMap": {"name": "cm", "items": [{"key": "k", "path": "/abs"}]}},
            {"data": {"k": "x"}},
            id="items-absolute-path",
        ),
        pytest.param(
            {"name": "cm", "configMap": {"name": "cm", "items": [{"key": "k", "path": "a/../.."}]}},
            {"data": {"k": "x"}},
            id="items-backstep",
        ),
    ],
)
def test_a_stored_traversal_never_writes_outside(
    tmp_path: Path, volume: dict[str, Any], stored: dict[str, Any] | None
) -> None:
    rt = _runtime()
    if stored is not None:
        meta = {"name": "cm", "namespace": "ns"}
        rt.core.store.put(("", "configmaps"), {"metadata": meta, **stored}, 2)
    sandbox = _sandbox(tmp_path, "p")
    with pytest.raises(MountError, match=r"MountVolume\.SetUp failed|invalid name"):
        rt._publish(sandbox, _pod("p", [volume]))
    assert _files_under(tmp_path) == {"pods", "pods/p", "pods/p/volumes"}


async def test_a_bad_secret_does_not_stop_other_pods_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "VOLUME_SYNC", 0.01)
    rt = _runtime()
    store = rt.core.store
    store.put(("", "secrets"), {"metadata": {"name": "bad", "namespace": "ns"}, "data": {}}, 1)
    store.put(("", "configmaps"), {"metadata": {"name": "cm", "namespace": "ns"}, "data": {}}, 2)
    for name, volume in (
        ("a", {"name": "s", "secret": {"secretName": "bad"}}),
        ("b", {"name": "c", "configMap": {"name": "cm"}}),
    ):
        store.put(("", "pods"), _pod(name, [volume]), 3)
        rt._sandboxes[f"uid-{name}"] = _sandbox(tmp_path, name)
    task = asyncio.create_task(rt._sync_volumes())
    try:
        # badly padded base64, as a hand-written manifest has it; the API refuses it now
        bad = {"metadata": {"name": "bad", "namespace": "ns"}, "data": {"k": "YQ="}}
        store.put(("", "secrets"), bad, 4)
        await asyncio.sleep(0.05)
        cm = {"metadata": {"name": "cm", "namespace": "ns"}, "data": {"greeting": "hello"}}
        store.put(("", "configmaps"), cm, 5)
        written = tmp_path / "pods" / "b" / "volumes" / "c" / "greeting"
        await eventually(
            lambda: written.read_text() if written.exists() else "",
            lambda text: text == "hello",
            within=10,
            what="pod b's ConfigMap volume refreshed",
        )
        assert not task.done()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


@pytest.mark.parametrize("relink", ["absolute", "relative"])
def test_a_relinked_data_link_is_never_followed_out(tmp_path: Path, relink: str) -> None:
    """A container that could write its ConfigMap volume relinks `..data` to a host directory:
    the refresh neither reads nor deletes what the link leads to, and writes a fresh copy."""
    outside = tmp_path / "host-dir"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("host data")
    volume = tmp_path / "volumes" / "cfg"
    publish(volume, {"mode": (b"first", 0o644)})
    link = volume / "..data"
    link.unlink()
    link.symlink_to(outside if relink == "absolute" else Path("../..") / "host-dir")
    assert publish(volume, {"mode": (b"second", 0o644)})
    assert (outside / "keep" / "file").read_text() == "host data"
    assert (volume / "mode").read_text() == "second"
    assert not (volume / "..data").resolve().is_relative_to(outside)
