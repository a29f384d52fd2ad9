"""The agent fails loudly and retries gently, against a real HTTPS server on loopback.

- An unexpected error - here a list answer without metadata (in the watch task), or a
  JobSet whose attempt is not a number (in the decision loop) - used to kill its task
  silently, leaving the agent up with its barrier held forever. It must be logged with
  its traceback and end the agent with a non-zero code, so the kubelet restarts it.
- A refused pod patch used to be retried every second, forever, by every pod. It must be
  retried with the reflector's backoff: patches at t=0 and after at least 0.8 s and
  0.8 + 1.6 s, so at most 3 within the first 4 seconds (4 or 5 at one a second).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from structlog.testing import capture_logs

from jobset.agent.apiclient import InClusterApi
from jobset.agent.environment import AgentEnv, parse_env
from jobset.agent.run import CRASH_EXIT_CODE, Agent
from kubesim.process import free_port
from tests.integration.agent.fakeapi import fake_api, jobset

WINDOW = 4.0
MOST_PATCHES = 3


def agent_env(tmp_path: Path) -> AgentEnv:
    ns = tmp_path / "namespace"
    ns.write_text("default")
    environ = {"JOBSET_NAME": "js", "POD_NAME": "pod", "STARTUP_PROBE_PORT": str(free_port())}
    return parse_env(environ, ns)


async def quiet_watch(request: web.Request) -> web.StreamResponse:
    """A healthy watch on which nothing happens."""
    resp = web.StreamResponse()
    await resp.prepare(request)
    await asyncio.sleep(3600)
    return resp


async def no_metadata(request: web.Request) -> web.Response:
    return web.json_response({"kind": "JobSetList", "metadata": None, "items": []})


async def attempt_not_a_number(request: web.Request) -> web.Response:
    bad = jobset("js", status={"currentInPlaceRestartAttempt": "three"})
    return web.json_response({"metadata": {"resourceVersion": "5"}, "items": [bad]})


async def accepted(request: web.Request) -> web.Response:
    return web.json_response({"kind": "Pod", "metadata": {"name": "pod"}})


async def refused(request: web.Request) -> web.Response:
    status = {
        "kind": "Status",
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": 'pods "pod" is forbidden: ValidatingAdmissionPolicy denied request',
    }
    return web.json_response(status, status=422)


@pytest.mark.parametrize(
    ("listing", "task"),
    [
        pytest.param(no_metadata, "agent-watch", id="watch-task"),
        pytest.param(attempt_not_a_number, "agent-loop", id="decision-loop"),
    ],
)
async def test_an_unexpected_error_ends_the_agent_non_zero(
    tmp_path: Path, listing: Any, task: str
) -> None:
    async with fake_api(tmp_path, watch=quiet_watch, patch=accepted, listing=listing) as api:
        client = InClusterApi("default", "js", "pod", api.environ, sa_dir=api.sa_dir)
        try:
            with capture_logs() as logs:
                # A hang is the failure this guards against: the bound only ends the test.
                code = await asyncio.wait_for(Agent(client, agent_env(tmp_path)).run(), 30)
        finally:
            await client.close()
    assert code == CRASH_EXIT_CODE  # non-zero: the kubelet restarts the container
    failed = [e for e in logs if e["event"].startswith("agent task failed")]
    assert len(failed) == 1 and failed[0]["task"] == task, logs
    assert failed[0]["log_level"] == "error" and isinstance(failed[0]["exc_info"], Exception)


async def test_a_refused_pod_patch_is_retried_with_backoff(tmp_path: Path) -> None:
    async with fake_api(tmp_path, watch=quiet_watch, patch=refused) as api:
        client = InClusterApi("default", "js", "pod", api.environ, sa_dir=api.sa_dir)
        agent = asyncio.create_task(Agent(client, agent_env(tmp_path)).run())
        try:
            await api.patched.wait()
            first = api.of("patch")[0]
            await asyncio.sleep(WINDOW + 0.5)
        finally:
            agent.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await agent
            await client.close()
    patches = [t - first for t in api.of("patch")]
    assert 2 <= len([t for t in patches if t < WINDOW]) <= MOST_PATCHES, patches
