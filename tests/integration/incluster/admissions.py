"""A client that keeps submitting objects through the in-cluster admission webhooks, and
counts every request that did not get the webhooks' answer.

It runs on its own thread and event loop (the tests around it are synchronous, kubectl
and Helm), with the project's API client and the admin kubeconfig. Each round it sends:

- a small JobSet, created for real (the mutating and validating JobSet webhooks);
- a pod labelled as a JobSet pod, `dryRun=All` (the mutating pod webhook; admission runs
  for dry-run requests as for real ones, and nothing is left to run);
- a JobSet only the validating webhook can refuse (job names beyond 63 characters),
  `dryRun=All`: its answer must be that refusal, so a webhook that is not reached (or not
  asked) counts as a failure as well.

A failure is any other outcome: an error status (`failed calling webhook ...`: refused
connection, reset, TLS, timeout, no endpoints), a transport error, or the invalid JobSet
accepted. Nothing is retried: one failed admission is one failure.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobset.resources import JOBSETS
from jobset.runtime.client import PODS, ApiError, Client
from tests.integration.incluster.conftest import DENIED, jobset_manifest

__all__ = ["AdmissionLoad"]


def _jobset(name: str, namespace: str, replicas: int = 1) -> dict[str, Any]:
    pod = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1s"]}],
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": replicas,
                    "template": {"spec": {"template": {"spec": pod}}},
                }
            ]
        },
    }


def _pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"jobset.sigs.k8s.io/jobset-name": "probe"},
        },
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1s"]}]},
    }


@dataclass
class AdmissionLoad:
    kubeconfig: Path
    namespace: str
    pause: float = 0.3
    sent: int = 0
    created: list[str] = field(default_factory=list)
    failures: list[tuple[float, str, str]] = field(default_factory=list)
    marks: list[tuple[str, float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def mark(self, phase: str) -> None:
        """Note where a phase (upgrade, rollback, ...) begins: `sent` at that moment."""
        self.marks.append((phase, time.monotonic(), self.sent))

    def sent_between(self, start: str, end: str) -> int:
        at = {phase: sent for phase, _, sent in self.marks}
        return at[end] - at[start]

    async def _run(self) -> None:
        client = await Client.connect(str(self.kubeconfig), qps=50, burst=100)
        try:
            n = 0
            while not self._stop.is_set():
                n += 1
                await self._one(f"real {n}", self._create_jobset(client, f"adm-{n}"))
                await self._one(
                    f"pod {n}", self._dry_run(client, PODS, _pod(f"p-{n}", self.namespace))
                )
                await self._one(f"invalid {n}", self._invalid(client))
                await asyncio.sleep(self.pause)
        finally:
            await client.close()

    async def _one(self, what: str, call: Any) -> None:
        self.sent += 1
        try:
            await call
        except ApiError as err:
            self.failures.append((time.monotonic(), what, f"{err.status}: {err}"))
        except Exception as err:  # transport errors: a failed admission all the same
            self.failures.append((time.monotonic(), what, repr(err)))

    async def _create_jobset(self, client: Client, name: str) -> None:
        await client.create(JOBSETS, _jobset(name, self.namespace))
        self.created.append(name)

    async def _dry_run(self, client: Client, res: Any, obj: dict[str, Any]) -> None:
        await client.request("POST", res.path(self.namespace), query=[("dryRun", "All")], body=obj)

    async def _invalid(self, client: Client) -> None:
        try:
            invalid = json.loads(jobset_manifest("a" * 56, self.namespace))  # as conftest's
            await self._dry_run(client, JOBSETS, invalid)
        except ApiError as err:
            if DENIED in str(err):
                return  # the validating webhook's answer
            raise
        raise AssertionError("the invalid JobSet was admitted")
