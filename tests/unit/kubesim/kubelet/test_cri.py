"""The kubelet's runtimes: a container goes to the runtime that claims its image, and the
simulated runtime keeps a program's log and the one of its run before a restart."""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from kubesim.kubelet.cri import ContainerRuntime, Runtimes
from kubesim.kubelet.simruntime import SimulatedRuntime
from kubesim.programs import Program


class OnlyWeb(SimulatedRuntime):
    """A second runtime that claims the images of one repository (as `--run-image` does)."""

    def claims(self, container: Mapping[str, Any]) -> bool:
        return str(container.get("image", "")).startswith("example.com/web")


def _pod(*images: str) -> dict[str, Any]:
    containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    return {"metadata": {"uid": "u1"}, "spec": {"containers": containers}}


def test_each_container_goes_to_the_runtime_that_claims_its_image() -> None:
    simulated, real = SimulatedRuntime(random.Random(0)), OnlyWeb(random.Random(0))
    runtimes = Runtimes(simulated, real)
    assert runtimes.for_container({"image": "example.com/web:v1"}) is real
    assert runtimes.for_container({"image": "busybox"}) is simulated
    assert runtimes.for_pod(_pod("busybox", "example.com/web:v1")) == [simulated, real]
    assert runtimes.for_pod(_pod("busybox")) == [simulated]
    alone = Runtimes(simulated, None)
    assert alone.for_container({"image": "example.com/web:v1"}) is simulated
    assert alone.all() == [simulated]


def test_the_simulated_runtime_keeps_the_log_of_the_run_before() -> None:
    runtime: ContainerRuntime = SimulatedRuntime(random.Random(0))
    pod = {**_pod("busybox"), "status": {"phase": "Running"}}
    run = SimpleNamespace(uid="u1")
    c = SimpleNamespace(name="c0", program=Program(1.0, 0, "first\n"), container_id="")
    assert runtime.logs(pod, "c0", previous=True) is None
    runtime.start(("ns", "p"), c, pod["spec"]["containers"][0], pod, run)
    assert c.container_id.startswith("containerd://") and len(c.container_id) == 77
    c.program = Program(1.0, 0, "second\n")
    runtime.start(("ns", "p"), c, pod["spec"]["containers"][0], pod, run)
    assert runtime.logs(pod, "c0") == "second\n"
    assert runtime.logs(pod, "c0", previous=True) == "first\n"
    runtime.forget("u1")
    assert runtime.logs(pod, "c0", previous=True) is None
