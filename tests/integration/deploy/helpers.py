"""Shared helpers of the deploy tests: paths, rendering, processes, polling."""

from __future__ import annotations

import functools
import http.client
import json
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from kubesim.process import SimProcess, controller_command, free_port
from tests.eventually import eventually_sync

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
CHART = REPO / "charts" / "jobset"
CRD_FILE = CONFIG / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"
DATA = Path(__file__).resolve().parent / "data"

T = TypeVar("T")


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize DIR`, parsed."""
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, f"kubectl kustomize {directory} failed:\n{out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def loaded_modules(log: str) -> set[str]:
    """Modules a `python -X importtime` process imported, from its stderr."""
    out: set[str] = set()
    for line in log.splitlines():
        if line.startswith("import time:") and "|" in line:
            out.add(line.rsplit("|", 1)[1].strip())
    return out


# A probe here may assert (a half-started server answers nonsense): that is "not yet".
eventually = functools.partial(eventually_sync, retry_on=(AssertionError,))


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError as err:
        return 0, str(err)


def scrape_secure(
    port: int,
    token: str,
    ca_pem: bytes,
    server_name: str,
    timeout: float = 30.0,
    *,
    host: str = "127.0.0.1",
) -> tuple[int, str]:
    """GET https://HOST:PORT/metrics with a bearer token, verifying the certificate
    against `ca_pem` for `server_name` (what a ServiceMonitor's tlsConfig says; HOST a pod
    IP, as Prometheus scrapes). ssl.SSLCertVerificationError when it does not verify."""
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=timeout)
    # Connect to the address, check the certificate for the Service's name (server_hostname).
    conn.sock = ctx.wrap_socket(
        socket.create_connection((host, port), timeout=timeout),
        server_hostname=server_name,
    )
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def scrape_install(sim: SimProcess, port: int, namespace: str = "jobset-system") -> tuple[int, str]:
    """/metrics of a controller installed by config/ or the chart (secure by default), as its
    ServiceMonitor scrapes it: the admin's token (allowed any path), the certificate checked
    against the webhook Secret's CA for the metrics Service's name."""
    import base64

    secret = get_json(sim, "secret", "jobset-webhook-server-cert", "-n", namespace)
    ca = base64.b64decode(secret["data"]["ca.crt"])
    token = yaml.safe_load(sim.kubeconfig.read_text())["users"][0]["user"]["token"]
    name = f"jobset-controller-manager-metrics-service.{namespace}.svc"
    return scrape_secure(port, str(token), ca, name)


def get_json(sim: SimProcess, *args: str) -> dict[str, Any]:
    return json.loads(sim.kubectl("get", *args, "-o", "json").stdout)  # type: ignore[no-any-return]


def apply(sim: SimProcess, objects: Iterable[dict[str, Any]] | str, *flags: str) -> None:
    text = objects if isinstance(objects, str) else yaml.safe_dump_all(list(objects))
    sim.kubectl(
        "apply", "--server-side", "--field-manager=deploy-test", *flags, "-f", "-", input=text
    )


class Controller:
    """`jobset controller` as a child process, as a container runs it."""

    def __init__(
        self, kubeconfig: Path, *flags: str, log: Path, python_flags: tuple[str, ...] = ()
    ) -> None:
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.log = log
        self._out = log.open("w")
        self.proc = subprocess.Popen(
            controller_command(
                kubeconfig,
                "--bind-address",
                "127.0.0.1",
                "--health-port",
                str(self.health_port),
                "--metrics-port",
                str(self.metrics_port),
                "--log-format",
                "console",
                *flags,
                python_flags=python_flags,
            ),
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, within: float = 60.0) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"controller exited {self.proc.returncode}:\n{self.output()}")
            return http_get(f"http://127.0.0.1:{self.health_port}/readyz")[0] == 200

        eventually(ready, within=within, interval=0.2)

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text()

    def stop(self, timeout: float = 40.0) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._out.closed:
            self._out.close()
        return self.proc.returncode


# What never belongs in a log line or an event, whatever the secret: PEM armour of keys and
# certificates, and the start of a JWT (a ServiceAccount token's header, base64url of
# '{"alg":').
SECRET_MARKERS = ("PRIVATE KEY-----", "BEGIN CERTIFICATE", "eyJhbGciOi")


def leaked(text: str, secrets: dict[str, bytes | str]) -> list[str]:
    """What of `secrets` (name -> value: tokens, PEM keys and certificates) shows in `text`,
    in clear, base64 or as any PEM line of it, plus any generic `SECRET_MARKERS`."""
    import base64

    found = [f"marker {m!r}" for m in SECRET_MARKERS if m in text]
    for name, value in secrets.items():
        raw = value.encode() if isinstance(value, str) else value
        forms = {raw.decode(errors="replace"), base64.b64encode(raw).decode()}
        # Any long enough line of a PEM body (a log might have cut the armour off).
        forms |= {
            line.decode()
            for line in raw.splitlines()
            if len(line) >= 40 and not line.startswith(b"-----")
        }
        found += [f"{name} ({len(f)} chars)" for f in forms if f and f in text]
    return found
