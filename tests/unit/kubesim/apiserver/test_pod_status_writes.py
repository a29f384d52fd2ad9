"""A pod's status write does not validate its spec again, as kube-apiserver's pod status
update (ValidatePodStatusUpdate) does not; a write of the pod itself still validates it."""

from __future__ import annotations

import orjson
import pytest

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.machinery.errors import ApiError


async def test_a_status_write_leaves_the_stored_spec_alone() -> None:
    core = ApiCore(Registry(served_types()), Store())
    ns_rt = core.registry.get("", "v1", "namespaces")
    pod_rt = core.registry.get("", "v1", "pods")
    assert ns_rt is not None and pod_rt is not None
    await core.create(ns_rt, "", {"metadata": {"name": "ns"}})
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    stored = await core.create(pod_rt, "ns", pod)
    # A spec today's rules reject, as a state directory of an older simulator may hold.
    bad = {**stored, "spec": {**stored["spec"], "containers": [{"name": "Not_A_Label"}]}}
    core.store.put(pod_rt.key, bad, core.store.next_rv())

    # Bodies as a client sends them: decoded, sharing nothing with the stored pod.
    body = orjson.loads(orjson.dumps({**bad, "status": {"phase": "Running"}}))
    written = await core.update(pod_rt, "ns", "p", body, Request(), "status")
    assert written["status"]["phase"] == "Running"

    relabelled = orjson.loads(orjson.dumps(written))
    relabelled["metadata"]["labels"] = {"a": "b"}
    with pytest.raises(ApiError) as err:
        await core.update(pod_rt, "ns", "p", relabelled, Request())
    assert err.value.code == 422
    assert "spec.containers[0]" in str(err.value)
