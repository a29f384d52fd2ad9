"""The agent process: `jobset in-place-restart-agent` (see the package docstring).

It watches only its own JobSet (a field selector on `metadata.name`, so the API server
sends nothing else; `apiclient.py`), and acts on every change as `decide.py` says:

- the attempt is written on its pod with server-side apply (field manager
  `in-place-restart-agent`, forced), the one write the agent makes: its ServiceAccount needs
  `patch` on pods and `get/list/watch` on jobsets, nothing more; the
  ValidatingAdmissionPolicy shipped beside the Role in examples/in-place-restart.yaml
  limits that ServiceAccount's pod updates to this annotation on the pod its token is
  bound to (tests/integration/sim/test_admission_policy.py);
- restart: the agent exits with `IN_PLACE_RESTART_EXIT_CODE`; the pod's
  `restartPolicyRules` make the kubelet restart it in place (`RestartAllContainers` for the
  sidecar, `Restart` for the main container in main-container mode);
- lift: sidecar mode serves `STARTUP_PROBE_PATH` on `STARTUP_PROBE_PORT` with 200, which
  passes the agent's startup probe and lets the kubelet start the worker containers;
  main-container mode runs `WORKER_COMMAND` and exits with its exit code.

SIGTERM / SIGINT end it with 128 + the signal number (not 0: the exit code decides what the
kubelet does next), after stopping the worker. A failed write is retried with client-go's
jittered backoff (`backoff.py`), so a refused patch costs the API server a few requests a
minute, not one a second per pod. An unexpected error in the watch or in the decision loop
is logged with its traceback and ends the agent with `CRASH_EXIT_CODE`: the kubelet then
restarts the container, where a dead task would leave the agent up, holding its barrier
forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Mapping
from typing import Any, Final

from aiohttp import web

from jobset.agent.apiclient import AgentApi, AgentApiError, InClusterApi, KubeconfigApi
from jobset.agent.backoff import Backoff
from jobset.agent.decide import AgentState, decide
from jobset.agent.environment import AgentEnv
from jobset.agent.logs import logger

__all__ = ["CRASH_EXIT_CODE", "Agent", "main", "run_agent"]

# The agent's own failure (an unexpected error), as Python exits on an uncaught exception.
CRASH_EXIT_CODE: Final = 1


def _shell() -> str:
    """Upstream's choice: $SHELL, else bash, else (this project's addition) sh."""
    return os.environ.get("SHELL") or shutil.which("bash") or shutil.which("sh") or "/bin/sh"


class Agent:
    """One run of the agent in its pod."""

    def __init__(self, api: AgentApi, env: AgentEnv) -> None:
        self.api = api
        self.env = env
        self.state = AgentState()
        self.log = logger(
            jobset=f"{env.namespace}/{env.jobset_name}",
            pod=env.pod_name,
            mode="sidecar" if env.sidecar_mode else "main-container",
        )
        self._latest: Mapping[str, Any] | None = None
        self._changed = asyncio.Event()
        self._done: asyncio.Future[int] | None = None
        self._runner: web.AppRunner | None = None
        self._worker: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._write_backoff = Backoff()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._signalled, sig)
        for work, name in ((self._follow(), "agent-watch"), (self._loop(), "agent-loop")):
            task = asyncio.create_task(work, name=name)
            task.add_done_callback(self._task_ended)
            self._tasks.append(task)
        self.log.info("in-place restart agent started", exit_code=self.env.exit_code)
        try:
            return await self._done
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._stop_worker()
            if self._runner is not None:
                await self._runner.cleanup()

    # ------------------------------------------------------------------ events

    async def _follow(self) -> None:
        async for js in self.api.jobset_views():
            self._seen(js)

    def _task_ended(self, task: asyncio.Task[None]) -> None:
        """The watch and the loop run until the agent ends: one that stops first failed."""
        if task.cancelled() or (self._done is not None and self._done.done()):
            return
        exc = task.exception()
        self.log.error(
            "agent task failed: exiting so that the kubelet restarts the container",
            task=task.get_name(),
            exit_code=CRASH_EXIT_CODE,
            exc_info=exc or RuntimeError("the task returned"),
        )
        self._finish(CRASH_EXIT_CODE)

    def _seen(self, js: Mapping[str, Any]) -> None:
        self._latest = js
        self._changed.set()

    def _finish(self, code: int) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result(code)

    def _signalled(self, sig: signal.Signals) -> None:
        self.log.info("received signal, shutting down", signal=sig.name)
        self._finish(128 + int(sig))

    async def _loop(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            js = self._latest
            if js is None:
                continue
            await self._act(js)

    async def _act(self, js: Mapping[str, Any]) -> None:
        while True:
            step = decide(self.state, js)
            if step.write_attempt is not None:
                if not await self._write_attempt(step.write_attempt):
                    await asyncio.sleep(self._write_backoff.next())
                    self._changed.set()
                    return
                self._write_backoff.reset()
                continue  # decide again, now knowing the attempt
            if step.restart:
                self.log.info(
                    "attempt outdated: exiting to restart this pod in place",
                    attempt=self.state.attempt,
                    exit_code=self.env.exit_code,
                )
                self._finish(self.env.exit_code)
            elif step.lift:
                await self._lift()
            return

    # ------------------------------------------------------------------ actions

    async def _write_attempt(self, attempt: int) -> bool:
        try:
            await self.api.patch_attempt(attempt)
        except AgentApiError as err:
            self.log.warning("cannot write the pod's in-place restart attempt", error=str(err))
            return False
        self.state.attempt = attempt
        self.log.info("wrote the pod's in-place restart attempt", attempt=attempt)
        return True

    async def _lift(self) -> None:
        self.state.barrier_up = False
        if self.env.sidecar_mode:
            await self._serve_startup_probe()
        else:
            await self._start_worker()

    async def _serve_startup_probe(self) -> None:
        async def ok(_: web.Request) -> web.Response:
            return web.Response(text="barrier is down\n")

        app = web.Application()
        app.router.add_get(self.env.startup_probe_path, ok)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "0.0.0.0", self.env.startup_probe_port)
        try:
            await site.start()
        except OSError as exc:
            self.log.error("startup probe server failed", error=str(exc))
            self._finish(1)
            return
        self.log.info(
            "barrier lifted: serving the startup probe",
            attempt=self.state.attempt,
            path=self.env.startup_probe_path,
            port=self.env.startup_probe_port,
        )

    async def _start_worker(self) -> None:
        self.log.info("barrier lifted: starting the worker", attempt=self.state.attempt)
        # Its own process group, so that stopping the agent stops what the worker started.
        self._worker = await asyncio.create_subprocess_exec(
            _shell(), "-c", self.env.worker_command, start_new_session=True
        )
        self._tasks.append(asyncio.create_task(self._wait_worker(self._worker)))

    async def _wait_worker(self, proc: asyncio.subprocess.Process) -> None:
        rc = await proc.wait()
        code = 128 - rc if rc < 0 else rc
        self.log.info("worker exited: the agent exits with its code", exit_code=code)
        self._finish(code)

    async def _stop_worker(self) -> None:
        proc = self._worker
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def run_agent(env: AgentEnv, kubeconfig: str | None = None) -> int:
    """Run until the agent decides to exit; returns its exit code."""
    kubeconfig = kubeconfig or os.environ.get("KUBECONFIG") or None
    api: AgentApi
    if kubeconfig is None:
        api = InClusterApi(env.namespace, env.jobset_name, env.pod_name)
    else:
        api = await KubeconfigApi.connect(kubeconfig, env.namespace, env.jobset_name, env.pod_name)
    try:
        return await Agent(api, env).run()
    finally:
        await api.close()


def main(argv: list[str]) -> int:
    """`jobset in-place-restart-agent ARGS`: parse, configure logs, check the environment,
    run. Called by `jobset.cli` before it builds its full parser, which would import what
    the agent does not need (start-up time matters here: `apiclient.py`)."""
    import argparse
    import sys

    from jobset.agent.environment import AgentConfigError, parse_env
    from jobset.agent.flags import add_agent_flags
    from jobset.agent.logs import configure

    parser = argparse.ArgumentParser(prog="jobset in-place-restart-agent")
    add_agent_flags(parser)
    args = parser.parse_args(argv)
    configure(args.log_format, args.log_level)
    try:
        env = parse_env(os.environ)
        return asyncio.run(run_agent(env, args.kubeconfig))
    except AgentConfigError as exc:
        print(f"jobset in-place-restart-agent: {exc}", file=sys.stderr)
        return 1
    except AgentApiError as exc:
        print(f"jobset in-place-restart-agent: {exc}", file=sys.stderr)
        return 1
