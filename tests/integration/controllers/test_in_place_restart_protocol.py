"""InPlaceRestart's controller side against a real API server (sim level none), the test
playing the agents (pod annotations) and the Job controller (Job status), as upstream's
integration tests do: the Pod watch, the status fields, the events, the fall-back to a
full recreate when a Job fails, and `maxRestarts`. (The agents as real processes:
test_in_place_restart.py.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset.resources import JOBSETS
from jobset.runtime.client import EVENTS, PODS
from tests.eventually import eventually

from .helpers import Env, jobset, rjob

ATTEMPT = "jobset.sigs.k8s.io/in-place-restart-attempt"
IN_PLACE_JOB = {"podReplacementPolicy": "Failed"}


@pytest.fixture
def features() -> dict[str, bool]:
    return {"InPlaceRestart": True}


def in_place(name: str, max_restarts: int = 3) -> dict[str, Any]:
    return jobset(
        name,
        rjob("w", 2, parallelism=1, backoff_limit=2147483647, job=IN_PLACE_JOB),
        failurePolicy={"maxRestarts": max_restarts, "restartStrategy": "InPlaceRestart"},
    )


async def make_pod(env: Env, js: str, job: str, phase: str = "Running") -> str:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-pod",
            "labels": {"jobset.sigs.k8s.io/jobset-name": js},
            "annotations": {"jobset.sigs.k8s.io/jobset-name": js},
        },
        "spec": {"containers": [{"name": "worker", "image": "busybox"}]},
    }
    made = await env.client.create(PODS, pod, env.ns)
    await env.client.patch(
        PODS, made["metadata"]["name"], {"status": {"phase": phase}}, env.ns, subresource="status"
    )
    return str(made["metadata"]["name"])


async def annotate(env: Env, pod: str, attempt: int) -> None:
    """What the agent does: server-side apply of its pod's attempt."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": env.ns, "annotations": {ATTEMPT: str(attempt)}},
    }
    await env.client.patch(
        PODS, pod, body, env.ns, patch_type="apply", field_manager="in-place-restart-agent"
    )


def attempts(js: dict[str, Any]) -> tuple[Any, Any]:
    status = js.get("status") or {}
    return status.get("previousInPlaceRestartAttempt"), status.get("currentInPlaceRestartAttempt")


async def test_barrier_group_restart_and_events(env: Env) -> None:
    await env.create(in_place("ipr"))
    jobs = await env.wait_jobs("ipr", 2)
    pods = [await make_pod(env, "ipr", j["metadata"]["name"]) for j in jobs]
    await annotate(env, pods[0], 0)
    js = await env.get("ipr")
    assert attempts(js) == (None, None)  # one pod of two: nothing yet
    await annotate(env, pods[1], 0)
    await env.wait_jobset("ipr", lambda js: attempts(js) == (None, 0), "the barrier at 0")

    await annotate(env, pods[0], 1)  # pod 0 restarted in place
    await env.wait_jobset("ipr", lambda js: attempts(js) == (0, 0), "a group restart")
    await annotate(env, pods[1], 1)  # its agent exited, came back at current + 1
    js = await env.wait_jobset("ipr", lambda js: attempts(js) == (0, 1), "the barrier at 1")
    assert js["status"]["restarts"] == 0
    assert len(await env.jobs("ipr")) == 2  # nothing recreated

    async def reasons() -> list[str]:
        evs = await env.client.list(EVENTS, env.ns)
        return [e["reason"] for e in evs["items"] if e["involvedObject"]["name"] == "ipr"]

    await eventually(
        reasons,
        lambda r: "InPlaceRestartStarted" in r and "InPlaceRestartCompleted" in r,
        what="the in-place restart events",
    )


async def test_failed_job_falls_back_to_recreate(env: Env) -> None:
    """A Job that fails despite the max backoffLimit restarts the JobSet as Recreate; the
    new pods join at the next attempt."""
    await env.create(in_place("fallback"))
    jobs = await env.wait_jobs("fallback", 2)
    pods = [await make_pod(env, "fallback", j["metadata"]["name"]) for j in jobs]
    for pod in pods:
        await annotate(env, pod, 0)
    await env.wait_jobset("fallback", lambda js: attempts(js) == (None, 0), "the barrier")
    await env.fail_job(jobs[0], reason="DeadlineExceeded")
    await env.wait_jobset("fallback", lambda js: js["status"].get("restarts") == 1, "a restart")
    new = await env.wait_jobs(
        "fallback",
        2,
        lambda js: all(
            j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1" for j in js
        ),
    )
    for pod in pods:
        await env.client.delete(PODS, pod, env.ns)
    fresh = [await make_pod(env, "fallback", f"{j['metadata']['name']}-r1") for j in new]
    for pod in fresh:
        await annotate(env, pod, 1)  # current + 1
    js = await env.wait_jobset("fallback", lambda js: attempts(js)[1] == 1, "the new barrier")
    assert js["status"]["restarts"] == 1


async def test_attempts_over_max_restarts_fail_the_jobset(env: Env) -> None:
    await env.create(in_place("limit", max_restarts=1))
    jobs = await env.wait_jobs("limit", 2)
    pods = [await make_pod(env, "limit", j["metadata"]["name"]) for j in jobs]
    await annotate(env, pods[0], 2)
    js = await env.wait_jobset(
        "limit", lambda js: js["status"].get("terminalState") == "Failed", "failed"
    )
    assert [c["reason"] for c in js["status"]["conditions"] if c["type"] == "Failed"] == [
        "ReachedMaxRestarts"
    ]


async def test_agents_with_a_kubeconfig_run_their_workers(env: Env) -> None:
    """The agent itself, in this process, through `--kubeconfig` (`KubeconfigApi`), in
    main-container mode: both agents write attempt 0, the controller lifts the barrier,
    each runs its worker and exits with its code."""
    from jobset.agent.apiclient import KubeconfigApi
    from jobset.agent.environment import AgentEnv
    from jobset.agent.run import Agent

    await env.create(in_place("agents"))
    jobs = await env.wait_jobs("agents", 2)
    pods = [await make_pod(env, "agents", j["metadata"]["name"]) for j in jobs]

    async def agent(pod: str, code: int) -> int:
        api = await KubeconfigApi.connect(str(env.sim.kubeconfig), env.ns, "agents", pod)
        agent_env = AgentEnv(env.ns, "agents", pod, f"exit {code}", "/barrier-is-down", 8081, 1)
        try:
            return await Agent(api, agent_env).run()
        finally:
            await api.close()

    codes = await asyncio.wait_for(asyncio.gather(agent(pods[0], 0), agent(pods[1], 7)), 60)
    assert list(codes) == [0, 7]
    for pod in pods:
        got = await env.client.get(PODS, pod, env.ns)
        assert got["metadata"]["annotations"][ATTEMPT] == "0"
    js = await env.get("agents")
    assert attempts(js) == (None, 0)


async def test_in_cluster_api_follows_the_jobset_and_patches_the_pod(
    env: Env, tmp_path: Path
) -> None:
    """The agent's own client (`InClusterApi`) against the API server, with the
    credentials a pod would have at its ServiceAccount path (here the kubeconfig's)."""
    import base64
    from urllib.parse import urlsplit

    from jobset.agent.apiclient import InClusterApi

    kubeconfig = yaml.safe_load(await asyncio.to_thread(Path(env.sim.kubeconfig).read_text))
    cluster = kubeconfig["clusters"][0]["cluster"]
    (tmp_path / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (tmp_path / "token").write_text(kubeconfig["users"][0]["user"]["token"])
    server = urlsplit(cluster["server"])
    environ = {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }

    await env.create(in_place("incluster"))
    await env.create(in_place("other"))  # not seen: the field selector names one JobSet
    jobs = await env.wait_jobs("incluster", 2)
    pod = await make_pod(env, "incluster", jobs[0]["metadata"]["name"])
    api = InClusterApi(env.ns, "incluster", pod, environ, sa_dir=tmp_path)
    try:
        views = api.jobset_views()
        first = await asyncio.wait_for(anext(views), 30)
        assert first["metadata"]["name"] == "incluster"
        await api.patch_attempt(0)
        got = await env.client.get(PODS, pod, env.ns)
        assert got["metadata"]["annotations"][ATTEMPT] == "0"
        managers = {m["manager"] for m in got["metadata"]["managedFields"]}
        assert "in-place-restart-agent" in managers
        await env.client.patch(
            JOBSETS, "incluster", {"metadata": {"annotations": {"touched": "yes"}}}, env.ns
        )
        while True:  # the watch delivers the change (status writes may come first)
            view = await asyncio.wait_for(anext(views), 30)
            assert view["metadata"]["name"] == "incluster"
            if (view["metadata"].get("annotations") or {}).get("touched") == "yes":
                break
        await views.aclose()
    finally:
        await api.close()


async def test_in_cluster_api_says_why_it_cannot_follow(env: Env, tmp_path: Path) -> None:
    """A rejected token (or missing RBAC) is logged and retried, not silently waited on."""
    import base64
    from urllib.parse import urlsplit

    from structlog.testing import capture_logs

    from jobset.agent.apiclient import InClusterApi

    kubeconfig = yaml.safe_load(await asyncio.to_thread(Path(env.sim.kubeconfig).read_text))
    cluster = kubeconfig["clusters"][0]["cluster"]
    (tmp_path / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (tmp_path / "token").write_text("not-a-token")
    server = urlsplit(cluster["server"])
    environ = {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }
    api = InClusterApi(env.ns, "nobody", "pod", environ, sa_dir=tmp_path)
    try:
        with capture_logs() as logs:
            views = api.jobset_views()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(anext(views), 1.5)
        warnings = [e for e in logs if e["event"] == "cannot follow the JobSet, retrying"]
        assert warnings and warnings[0]["error"].startswith("401")
    finally:
        await api.close()
