"""`--run-image`: containers of a mapped image run as real processes in the simulator.

Each test starts a `SimCluster` in-process with `example.com/web` mapped to `realpod/` (a
small Python HTTP server, `realpod/web`), and checks what a container in Kubernetes gets: its
own network namespace and IP, the in-cluster environment and ServiceAccount files, volumes,
its uid, probes, restarts, logs, SIGTERM then SIGKILL; and that nothing is left behind.
Needs root (network and mount namespaces); skipped otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from kubernetes_asyncio import client, config

from kubesim.cluster import SimCluster, SimOptions
from kubesim.kubelet.network import pids_in_netns
from kubesim.kubelet.runc import cgroup_dirs
from kubesim.process import SimProcess, start_sim
from tests.eventually import eventually, eventually_sync

T = TypeVar("T")
NS = "default"
IMAGE = "example.com/web:v1"
# The tests' own virtualenv: a container of this image sees it and its base interpreter.
VENV_IMAGE = "example.com/venv"
REALPOD = Path(__file__).with_name("realpod")


@contextlib.contextmanager
def readable_realpod() -> Iterator[Path]:
    """A copy of `realpod/` that the pods' uid 65532 can read: the checkout may sit in a 0700
    directory (a home directory, `mktemp -d`), and pytest's own temporary directories are
    private to root too."""
    top = Path(tempfile.mkdtemp(prefix="jobset-realpod-", dir="/var/tmp"))
    try:
        top.chmod(0o755)  # mkdtemp makes it 0700
        copy = top / "realpod"
        shutil.copytree(REALPOD, copy)
        for path in (copy, *copy.rglob("*")):
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
        yield copy
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def realpod() -> Iterator[Path]:
    with readable_realpod() as copy:
        yield copy


class Env:
    def __init__(
        self, cluster: SimCluster, api: client.ApiClient, kubeconfig: Path, realpod: Path
    ) -> None:
        self.realpod = realpod
        self.cluster = cluster
        self.api = api
        self.core = client.CoreV1Api(api)
        self.kubeconfig = kubeconfig

    async def create(self, manifest: dict[str, Any]) -> Any:
        body: Any = manifest
        kind = manifest["kind"]
        if kind == "Pod":
            return await self.core.create_namespaced_pod(NS, body)
        if kind == "ConfigMap":
            return await self.core.create_namespaced_config_map(NS, body)
        if kind == "Secret":
            return await self.core.create_namespaced_secret(NS, body)
        rbac = client.RbacAuthorizationV1Api(self.api)
        if kind == "Role":
            return await rbac.create_namespaced_role(NS, body)
        return await rbac.create_namespaced_role_binding(NS, body)

    async def pod(self, name: str) -> client.V1Pod:
        return await self.core.read_namespaced_pod(name, NS)

    async def kubectl(self, *args: str) -> str:
        def run() -> str:
            out = subprocess.run(
                ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            return out.stdout

        return await asyncio.to_thread(run)


async def http(url: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as s,
        s.get(url, timeout=aiohttp.ClientTimeout(total=5)) as r,
    ):
        return r.status, await r.read()


def exists(path: str) -> bool:
    return os.path.exists(path)


def in_pid_namespace(link: str) -> list[int]:
    """The host pids of the processes in the PID namespace `link` (`pid:[inode]`)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == link:
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def netns_of(index: int) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"ksim{index}-")]


def links_of(index: int) -> list[str]:
    out = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    names = [line.split()[0].split("@")[0] for line in out.splitlines()]
    return [n for n in names if n == f"ksim{index}" or n.startswith(f"ksim{index}v")]


@pytest.fixture
async def env(tmp_path: Path, realpod: Path) -> AsyncIterator[Env]:
    async with real_cluster(tmp_path, realpod) as e:
        yield e


@contextlib.asynccontextmanager
async def real_cluster(tmp_path: Path, realpod: Path | None = None) -> AsyncIterator[Env]:
    """A simulator with `example.com/web` mapped to a readable copy of `realpod/` (`realpod`,
    or one made for this cluster), and a client for it."""
    if realpod is None:
        with readable_realpod() as copy:
            async with real_cluster(tmp_path, copy) as env:
                yield env
        return
    kubeconfig = tmp_path / "kubeconfig"
    cluster = SimCluster(
        SimOptions(
            kubeconfig=str(kubeconfig),
            nodes="2",
            time_scale=0.1,
            run_images={"example.com/web": str(realpod), VENV_IMAGE: str(Path(sys.prefix) / "bin")},
        )
    )
    await cluster.start()
    index = cluster.runtime.bridge.index
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    api = client.ApiClient(configuration=cfg)
    try:
        yield Env(cluster, api, kubeconfig, realpod)
    finally:
        await api.close()
        await cluster.stop()
    # Nothing is left behind: namespaces, interfaces, state directories (runc's with them),
    # cgroups.
    assert netns_of(index) == []
    assert links_of(index) == []
    assert not exists(f"/run/kubesim/ksim{index}")
    assert not any(p.exists() for p in cgroup_dirs(f"kubesim/ksim{index}"))


def web_pod(name: str, **container: Any) -> dict[str, Any]:
    spec = container.pop("pod_spec", {})
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"app": "web", "tier": name}},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            **spec,
            "containers": [{"name": "web", "image": IMAGE, "command": ["web"], **container}],
        },
    }


def running(p: client.V1Pod) -> bool:
    return p.status.phase == "Running" and bool(p.status.pod_ip)


async def test_real_pods_network_env_volumes_identity_logs(env: Env) -> None:
    await env.create(
        {"kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}
    )
    secret = base64.b64encode(b"s3cret").decode()
    await env.create(
        {"kind": "Secret", "metadata": {"name": "creds"}, "data": {"password": secret}}
    )
    env_vars = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "TIER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}},
        {
            "name": "MODE",
            "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}},
        },
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
        {
            "name": "CPU_LIMIT",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
        },
        {"name": "GREETING", "value": "hello $(POD_NAME)"},
    ]
    for name in ("a", "b"):
        await env.create(
            web_pod(
                name,
                env=env_vars,
                envFrom=[{"prefix": "CM_", "configMapRef": {"name": "settings"}}],
                resources={"limits": {"cpu": "250m"}},
                volumeMounts=[{"name": "creds", "mountPath": "/etc/creds", "readOnly": True}],
                securityContext={"runAsUser": 65532, "runAsGroup": 65532} if name == "b" else {},
                pod_spec={"volumes": [{"name": "creds", "secret": {"secretName": "creds"}}]},
            )
        )
    pods = {n: await eventually(functools.partial(env.pod, n), running) for n in ("a", "b")}
    ips = {n: p.status.pod_ip for n, p in pods.items()}
    assert ips["a"] != ips["b"]
    # Both bind port 8080, each in its own network namespace, each answers on its IP.
    for name, ip in ips.items():
        _status, body = await eventually(
            functools.partial(_try, f"http://{ip}:8080/"), lambda r: r[0] == 200
        )
        assert json.loads(body)["pod"] == name

    _, body = await http(f"http://{ips['a']}:8080/env")
    variables = json.loads(body)
    assert variables["POD_NAME"] == "a"
    assert variables["POD_IP"] == ips["a"]
    assert variables["NODE"] == pods["a"].spec.node_name
    assert variables["TIER"] == "a"
    assert variables["MODE"] == "fast"
    assert variables["CM_mode"] == "fast"
    assert variables["PASSWORD"] == "s3cret"
    assert variables["CPU_LIMIT"] == "250"
    assert variables["GREETING"] == "hello a"
    assert variables["HOSTNAME"] == "a"
    assert variables["PATH"].split(":")[0] == str(env.realpod)
    gateway = env.cluster.runtime.api_host
    assert variables["KUBERNETES_SERVICE_HOST"] == gateway

    async def file(ip: str, path: str) -> bytes:
        status, body = await http(f"http://{ip}:8080/file?path={path}")
        assert status == 200, body
        return body

    assert await file(ips["a"], "/etc/creds/password") == b"s3cret"
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    assert await file(ips["a"], f"{sa}/namespace") == NS.encode()
    assert await file(ips["a"], f"{sa}/ca.crt") == env.cluster.ca_pem
    assert len(await file(ips["b"], f"{sa}/token")) > 20
    # The mounts are private: nothing appeared on the host.
    assert not exists("/etc/creds")
    assert not exists("/run/secrets")

    _, body = await http(f"http://{ips['b']}:8080/whoami")
    assert json.loads(body)["uid"] == 65532
    assert json.loads(body)["gid"] == 65532
    _, body = await http(f"http://{ips['a']}:8080/whoami")
    assert json.loads(body)["uid"] == 0

    logs = await env.kubectl("logs", "b")
    assert "serving on port 8080 as uid 65532" in logs

    await env.core.delete_namespaced_pod("a", NS, grace_period_seconds=1)
    await env.core.delete_namespaced_pod("b", NS, grace_period_seconds=1)
    await eventually(lambda: env.core.list_namespaced_pod(NS), lambda r: not r.items)
    index = env.cluster.runtime.bridge.index
    await eventually(lambda: asyncio.to_thread(netns_of, index), lambda v: v == [])


async def _try(url: str) -> tuple[int, bytes]:
    try:
        return await http(url)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        return 0, str(exc).encode()


async def test_in_cluster_client_lists_pods_with_its_service_account(env: Env) -> None:
    await env.create(
        {
            "kind": "Role",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        }
    )
    await env.create(
        {
            "kind": "RoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "pod-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "pod-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}],
        }
    )
    script = (
        "import asyncio\n"
        "from kubernetes_asyncio import client, config\n"
        "async def main():\n"
        "    config.load_incluster_config()\n"
        "    async with client.ApiClient() as api:\n"
        "        pods = await client.CoreV1Api(api).list_namespaced_pod('default')\n"
        "        print('pods:', sorted(p.metadata.name for p in pods.items), flush=True)\n"
        "asyncio.run(main())\n"
    )
    pod = web_pod("incluster", command=["python", "-c", script], image=VENV_IMAGE)
    pod["spec"]["restartPolicy"] = "Never"
    await env.create(pod)
    done = await eventually(
        lambda: env.pod("incluster"), lambda p: p.status.phase in ("Succeeded", "Failed")
    )
    logs = await env.kubectl("logs", "incluster")
    assert done.status.phase == "Succeeded", logs
    assert "pods: ['incluster']" in logs


async def test_probes_drive_ready_and_restarts(env: Env) -> None:
    pod = web_pod(
        "probed",
        readinessProbe={"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1},
        livenessProbe={
            "httpGet": {"path": "/healthz", "port": 8080},
            "periodSeconds": 1,
            "failureThreshold": 2,
        },
        startupProbe={
            "exec": {"command": ["sh", "-c", "test $(hostname) = probed"]},
            "periodSeconds": 1,
        },
        ports=[{"name": "http", "containerPort": 8080}],
    )
    await env.create(pod)
    p = await eventually(
        lambda: env.pod("probed"), lambda p: running(p) and p.status.container_statuses[0].started
    )
    conditions = {c.type: c.status for c in p.status.conditions}
    assert conditions["Ready"] == "False"  # the readiness probe has not passed yet
    ip = p.status.pod_ip
    await eventually(lambda: _try(f"http://{ip}:8080/set-ready"), lambda r: r[0] == 200)
    await eventually(
        lambda: env.pod("probed"),
        lambda p: {c.type: c.status for c in p.status.conditions}["Ready"] == "True",
    )
    # Liveness failure: the container is killed and restarted (a new process).
    await http(f"http://{ip}:8080/set-unhealthy")
    p = await eventually(
        lambda: env.pod("probed"),
        lambda p: (
            p.status.container_statuses[0].restart_count == 1
            and p.status.container_statuses[0].state.running is not None
        ),
    )
    cs = p.status.container_statuses[0]
    assert cs.last_state.terminated is not None
    assert cs.ready is False  # a new instance is not ready until its probe passes
    previous = await env.kubectl("logs", "probed", "--previous")
    assert "got SIGTERM" in previous
    current = await eventually(
        lambda: env.kubectl("logs", "probed"), lambda text: "serving on port 8080" in text
    )
    assert "got SIGTERM" not in current


async def test_deletion_sends_sigterm_then_sigkill_after_the_grace_period(
    env: Env, tmp_path: Path
) -> None:
    record_dir = tmp_path / "record"
    record_dir.mkdir()
    pod = web_pod(
        "stubborn",
        env=[
            {"name": "IGNORE_TERM", "value": "1"},
            {"name": "TERM_RECORD", "value": "/var/record/log"},
        ],
        volumeMounts=[{"name": "record", "mountPath": "/var/record"}],
        pod_spec={
            "terminationGracePeriodSeconds": 2,
            "volumes": [{"name": "record", "hostPath": {"path": str(record_dir)}}],
        },
    )
    await env.create(pod)
    p = await eventually(lambda: env.pod("stubborn"), running)
    _, body = await eventually(
        lambda: _try(f"http://{p.status.pod_ip}:8080/whoami"), lambda r: r[0] == 200
    )
    pidns = json.loads(body)["pidns"]
    assert in_pid_namespace(pidns)
    follow = asyncio.create_task(env.kubectl("logs", "-f", "stubborn"))
    await env.core.delete_namespaced_pod("stubborn", NS)
    await eventually(lambda: env.core.list_namespaced_pod(NS), lambda r: not r.items)
    assert (record_dir / "log").read_text().startswith("SIGTERM")
    assert not in_pid_namespace(pidns)  # it ignored SIGTERM: SIGKILL ended it
    followed = await asyncio.wait_for(follow, 30)  # -f ends when the container does
    assert "serving on port 8080" in followed and "got SIGTERM" in followed


async def test_container_without_command_or_entrypoint_fails_to_start(env: Env) -> None:
    pod = web_pod("nocommand")
    del pod["spec"]["containers"][0]["command"]
    await env.create(pod)
    p = await eventually(
        lambda: env.pod("nocommand"),
        lambda p: (
            bool(p.status.container_statuses)
            and p.status.container_statuses[0].last_state.terminated is not None
        ),
    )
    term = p.status.container_statuses[0].last_state.terminated
    assert term.reason == "StartError"
    assert term.exit_code == 128
    assert "entrypoint" in term.message


POD_YAML = """
apiVersion: v1
kind: Pod
metadata: {name: w}
spec:
  containers: [{name: web, image: example.com/web:v2, command: [web]}]
"""


def _wait_running(sim: SimProcess) -> str:
    for _ in range(300):
        out = sim.kubectl("get", "pod", "w", "-o", "jsonpath={.status.phase} {.status.podIP}")
        phase, _, ip = out.stdout.partition(" ")
        if phase == "Running" and ip:
            return ip
        time.sleep(0.1)
    raise AssertionError("pod w did not run")


def test_the_command_cleans_up_on_sigterm_and_sweeps_a_crashed_run(
    tmp_path: Path, realpod: Path
) -> None:
    flags = ("--nodes", "1", "--run-image", f"example.com/web={realpod}")
    crashed = start_sim(tmp_path / "one", *flags)
    crashed.kubectl("apply", "-f", "-", input=POD_YAML)
    _wait_running(crashed)
    stale = pod_netns(crashed, "w")
    assert set(stale) <= set(netns_all())
    inode = os.stat(f"/run/netns/{stale[0]}").st_ino
    assert pids_in_netns(inode)  # the pod's container runs
    crashed.stop(signal.SIGKILL)  # leaves its namespace, bridge and state behind ...
    # ... but not its containers: runc's reaper deletes them as the simulator goes.
    eventually_sync(lambda: pids_in_netns(inode), lambda pids: pids == [], within=10)
    second = start_sim(tmp_path / "two", *flags)  # sweeps them at start
    try:
        assert not set(stale) & set(netns_all())
        second.kubectl("apply", "-f", "-", input=POD_YAML)
        _wait_running(second)
        mine = pod_netns(second, "w")
        assert set(mine) <= set(netns_all())
    finally:
        assert second.stop(signal.SIGTERM) == 0
    assert not set(mine) & set(netns_all())


def netns_all() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines()]


def pod_netns(sim: SimProcess, pod: str) -> list[str]:
    """The network namespace of this simulator's pod (`ksimN-<uid prefix>`), not any other
    simulator's: other runs on the same machine have theirs."""
    uid = sim.kubectl("get", "pod", pod, "-o", "jsonpath={.metadata.uid}").stdout.strip()
    found = [
        n
        for n in netns_all()
        if n.startswith("ksim") and n.endswith("-" + uid.replace("-", "")[:12])
    ]
    assert len(found) == 1, (uid, netns_all())
    return found


async def test_read_only_root_file_system_leaves_volumes_writable(env: Env) -> None:
    script = "touch /etc/x; echo etc=$?; touch /tmp/ok; echo tmp=$?"
    pod = web_pod(
        "readonly",
        command=["sh", "-c", script],
        securityContext={"readOnlyRootFilesystem": True, "runAsUser": 65532},
        volumeMounts=[{"name": "tmp", "mountPath": "/tmp"}],
        pod_spec={"restartPolicy": "Never", "volumes": [{"name": "tmp", "emptyDir": {}}]},
    )
    await env.create(pod)
    await eventually(lambda: env.pod("readonly"), lambda p: p.status.phase == "Succeeded")
    logs = await env.kubectl("logs", "readonly")
    assert "etc=1" in logs and "tmp=0" in logs
    assert "Read-only file system" in logs


async def test_a_new_namespace_has_its_default_service_account(env: Env) -> None:
    """kube-controller-manager's serviceaccounts controller: a pod in a namespace made with
    `kubectl create namespace` gets its token and runs."""
    await env.kubectl("create", "namespace", "team")
    await env.core.create_namespaced_pod("team", web_pod("t"))
    await eventually(lambda: env.core.read_namespaced_pod("t", "team"), running)
    logs = await eventually(
        lambda: env.kubectl("logs", "-n", "team", "t"), lambda out: "serving on port" in out
    )
    assert "simulated" not in logs


async def test_a_real_container_that_cannot_start_is_pending_and_never_simulated(
    env: Env,
) -> None:
    await env.create(
        web_pod(
            "nocm",
            volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}],
            pod_spec={"volumes": [{"name": "cfg", "configMap": {"name": "missing"}}]},
        )
    )

    def waiting_on_the_configmap(p: client.V1Pod) -> bool:
        statuses = p.status.container_statuses or []
        waiting = statuses[0].state.waiting if statuses else None
        return waiting is not None and 'configmap "missing" not found' in (waiting.message or "")

    pod = await eventually(lambda: env.pod("nocm"), waiting_on_the_configmap)
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    logs = await asyncio.to_thread(  # the simulator answers on this test's loop
        subprocess.run,
        ["kubectl", "--kubeconfig", str(env.kubeconfig), "logs", "nocm"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (logs.returncode, logs.stdout) == (1, "")
    assert logs.stderr == (
        'Error from server (BadRequest): container "web" in pod "nocm" is waiting to start: '
        "ContainerCreating\n"
    )


def test_without_runc_the_command_names_the_package(tmp_path: Path) -> None:
    """`--run-image` needs runc: a PATH without it is a one-line error naming the package."""
    flags = ["--kubeconfig", str(tmp_path / "kubeconfig"), "--run-image", f"x={tmp_path}"]
    done = subprocess.run(
        [sys.executable, "-m", "jobset.cli", "dev", "--port", "0", *flags],
        env={"PATH": str(tmp_path)},  # no runc there
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "jobset dev: --run-image needs the OCI runtime runc: install the Debian package "
        "`runc` (apt-get install runc; `make test` installs it)"
    ]


STUBBORN_YAML = """
apiVersion: v1
kind: Pod
metadata: {name: w}
spec:
  terminationGracePeriodSeconds: 600
  containers:
  - {name: web, image: example.com/web:v2, command: [sh, -c, "trap '' TERM; sleep 1000"]}
"""


def test_sigterm_stops_the_simulator_without_waiting_out_grace_periods(
    tmp_path: Path, realpod: Path
) -> None:
    """As `kind delete cluster` kills containers, the simulator's own shutdown gives a pod a
    short budget, not its grace period: a container that ignores SIGTERM, with 600 s of grace,
    is killed, and the command exits 0 (`stop` would kill it after 20 s)."""
    sim = start_sim(tmp_path, "--nodes", "1", "--run-image", f"example.com/web={realpod}")
    sim.kubectl("apply", "-f", "-", input=STUBBORN_YAML)
    _wait_running(sim)
    inode = os.stat(f"/run/netns/{pod_netns(sim, 'w')[0]}").st_ino
    assert pids_in_netns(inode)
    assert sim.stop(signal.SIGTERM) == 0
    assert any("container process ended" in line and "code=137" in line for line in sim.output)
    assert pids_in_netns(inode) == []
