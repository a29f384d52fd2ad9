"""Container probes: their settings, the kubelet's counting of results, and when each is due.

`ProbeState` is pure: `record` applies one result with the success / failure thresholds and
says whether the probe's verdict changed; `due` and `next_probe` give the schedule
(`initialDelaySeconds` after the container started, then every `periodSeconds`; only the
startup probe runs until it has succeeded, as in Kubernetes). Probes of real processes run in
wall time: `--time-scale` does not change them.

`run_probe` performs one httpGet (HTTPS without certificate verification, as the kubelet
does), tcpSocket or exec probe; exec commands are run by the caller's `exec_in` inside the
container's namespaces.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp

__all__ = ["ProbeSpec", "ProbeState", "next_probe", "run_probe"]

KINDS: Final = ("startup", "readiness", "liveness")

ExecIn = Callable[[Sequence[str], float], Awaitable[int]]


@dataclass(frozen=True)
class ProbeSpec:
    kind: str  # startup | readiness | liveness
    handler: Mapping[str, Any]
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def of(cls, kind: str, probe: Mapping[str, Any]) -> ProbeSpec:
        return cls(
            kind=kind,
            handler=probe,
            initial_delay=float(probe.get("initialDelaySeconds") or 0),
            period=float(probe.get("periodSeconds") or 10),
            timeout=float(probe.get("timeoutSeconds") or 1),
            success_threshold=int(probe.get("successThreshold") or 1),
            failure_threshold=int(probe.get("failureThreshold") or 3),
        )


@dataclass
class ProbeState:
    """One probe of one container instance."""

    spec: ProbeSpec
    started_at: float
    verdict: bool | None = None  # None until the thresholds decide
    successes: int = 0
    failures: int = 0
    last_at: float | None = None
    messages: list[str] = field(default_factory=list)

    def due(self) -> float:
        if self.last_at is None:
            return self.started_at + self.spec.initial_delay
        return self.last_at + self.spec.period

    def record(self, ok: bool, now: float, message: str = "") -> bool:
        """Count one result; True when the verdict changed."""
        self.last_at = now
        before = self.verdict
        if ok:
            self.successes += 1
            self.failures = 0
            if self.successes >= self.spec.success_threshold:
                self.verdict = True
        else:
            self.failures += 1
            self.successes = 0
            if message:
                self.messages = [*self.messages[-4:], message]
            if self.failures >= self.spec.failure_threshold:
                self.verdict = False
        return self.verdict != before

    def reset(self) -> None:
        """After a liveness or startup failure the container restarts: counting starts over."""
        self.verdict = None
        self.successes = self.failures = 0


def active(states: Sequence[ProbeState]) -> list[ProbeState]:
    """The probes that run now: the startup probe alone until it has succeeded."""
    startup = [s for s in states if s.spec.kind == "startup"]
    if startup and startup[0].verdict is not True:
        return startup
    return [s for s in states if s.spec.kind != "startup"]


def next_probe(states: Sequence[ProbeState]) -> ProbeState | None:
    """The probe that is due first."""
    candidates = active(states)
    return min(candidates, key=lambda s: s.due()) if candidates else None


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _port(value: Any, container: Mapping[str, Any]) -> int:
    if isinstance(value, int) or str(value).isdigit():
        return int(value)
    for p in container.get("ports") or ():
        if p.get("name") == value:
            return int(p["containerPort"])
    raise ValueError(f"port {value!r} not found among the container's ports")


async def run_probe(
    spec: ProbeSpec,
    container: Mapping[str, Any],
    pod_ip: str,
    session: aiohttp.ClientSession,
    exec_in: ExecIn,
) -> tuple[bool, str]:
    """One probe: (success, message on failure)."""
    h = spec.handler
    try:
        if "httpGet" in h:
            g = h["httpGet"]
            scheme = str(g.get("scheme") or "HTTP").lower()
            host = str(g.get("host") or pod_ip)
            path = str(g.get("path") or "/")
            url = f"{scheme}://{host}:{_port(g.get('port'), container)}{path}"
            headers = {str(x["name"]): str(x["value"]) for x in g.get("httpHeaders") or ()}
            headers.setdefault("User-Agent", "kube-probe/1.32")
            async with session.get(
                url,
                headers=headers,
                ssl=_insecure() if scheme == "https" else True,
                timeout=aiohttp.ClientTimeout(total=spec.timeout),
                allow_redirects=False,
            ) as resp:
                if 200 <= resp.status < 400:
                    return True, ""
                return False, f"HTTP probe failed with statuscode: {resp.status}"
        if "tcpSocket" in h:
            t = h["tcpSocket"]
            host = str(t.get("host") or pod_ip)
            _r, writer = await asyncio.wait_for(
                asyncio.open_connection(host, _port(t.get("port"), container)), spec.timeout
            )
            writer.close()
            return True, ""
        if "exec" in h:
            command = [str(x) for x in (h["exec"].get("command") or [])]
            code = await exec_in(command, spec.timeout)
            return code == 0, "" if code == 0 else f"command {command} exited with {code}"
        return False, "probe has no handler the simulator runs (httpGet, tcpSocket, exec)"
    except TimeoutError:
        return False, f"probe timed out after {spec.timeout:g}s"
    except (OSError, aiohttp.ClientError, ValueError) as exc:
        return False, f"probe failed: {exc}"
