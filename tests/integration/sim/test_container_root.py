"""`--run-image` containers get a root, PID namespace, capabilities and kubelet files of their own.

Each test starts the simulator in-process (the `env` fixture of `test_processes.py`), runs
real processes as pods and checks, from inside (their logs) and from the host (its files
and /proc), what a container runtime guarantees: /etc/resolv.conf per dnsPolicy, the managed
/etc/hosts and `hostname -f`, a writable layer of its own over the read-only host (volumes at
any mountPath), readOnlyRootFilesystem, a PID namespace whose end ends every process in it,
and containerd's capability set. Needs root, as `test_processes.py`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.eventually import eventually
from tests.integration.sim.test_processes import NS, Env, exists, real_cluster, web_pod

pytestmark = [pytest.mark.kubectl]

PY = "python3"  # the host's /usr/bin/python3, which every container sees read-only


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with real_cluster(tmp_path) as e:
        yield e


def script_pod(name: str, script: str, **extra: Any) -> dict[str, Any]:
    """A pod whose one container runs a shell script once."""
    spec = {"restartPolicy": "Never", **extra.pop("pod_spec", {})}
    return web_pod(name, command=["sh", "-c", script], pod_spec=spec, **extra)


async def finished(env: Env, name: str) -> str:
    """The logs of pod `name` once its container has ended (it must succeed)."""
    pod = await eventually(
        lambda: env.pod(name), lambda p: p.status.phase in ("Succeeded", "Failed")
    )
    logs = await env.kubectl("logs", name)
    assert pod.status.phase == "Succeeded", logs
    return logs


def host_searches() -> list[str]:
    searches: list[str] = []
    for line in Path("/etc/resolv.conf").read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "search":
            searches = [s.rstrip(".") for s in fields[1:]]
    return searches


def host_nameservers() -> list[str]:
    lines = Path("/etc/resolv.conf").read_text().splitlines()
    return [ln.split()[1] for ln in lines if ln.startswith("nameserver ") and len(ln.split()) > 1]


async def test_resolv_conf_follows_the_dns_policy(env: Env) -> None:
    show = "cat /etc/resolv.conf"
    none_config = {
        "nameservers": ["10.0.0.10", "10.0.0.11"],
        "searches": ["a.example", "b.example"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
    }
    pods = {
        "cluster": {},
        "hostnet": {"dnsPolicy": "ClusterFirstWithHostNet", "dnsConfig": {
            "searches": ["extra.example"], "options": [{"name": "ndots", "value": "1"}]}},
        "node": {"dnsPolicy": "Default"},
        "none": {"dnsPolicy": "None", "dnsConfig": none_config},
    }  # fmt: skip
    for name, spec in pods.items():
        await env.create(script_pod(name, show, pod_spec=spec))
    gateway = env.cluster.runtime.api_host
    cluster = f"{NS}.svc.cluster.local svc.cluster.local cluster.local"
    extra = "".join(f" {s}" for s in host_searches())
    assert await finished(env, "cluster") == (
        f"search {cluster}{extra}\nnameserver {gateway}\noptions ndots:5\n"
    )
    assert await finished(env, "hostnet") == (
        f"search {cluster}{extra} extra.example\nnameserver {gateway}\noptions ndots:1\n"
    )
    node = "".join(f"nameserver {s}\n" for s in host_nameservers())
    assert (await finished(env, "node")).endswith(node)
    assert "cluster.local" not in await finished(env, "node")
    assert await finished(env, "none") == (
        "search a.example b.example\nnameserver 10.0.0.10\nnameserver 10.0.0.11\n"
        "options ndots:2 edns0\n"
    )
    assert host_nameservers() != [gateway]  # the host's own file is untouched


async def test_hosts_file_hostname_and_fqdn(env: Env) -> None:
    show = "cat /etc/hosts; echo ---; hostname; hostname -f; cat /etc/hostname"
    aliases = [
        {"ip": "10.1.2.3", "hostnames": ["foo.remote", "bar.remote"]},
        {"ip": "127.0.0.1", "hostnames": ["foo.local"]},
    ]
    spec = {"hostname": "worker-0", "subdomain": "group", "hostAliases": aliases}
    await env.create(script_pod("named", show, pod_spec=spec))
    long_name = "x" * 62 + "-y"
    long_pod = script_pod(long_name, show)
    long_pod["metadata"]["labels"] = {}
    await env.create(long_pod)
    named = await eventually(lambda: env.pod("named"), lambda p: bool(p.status.pod_ip))
    ip = named.status.pod_ip
    hosts, _, names = (await finished(env, "named")).partition("---\n")
    assert hosts == (
        "# Kubernetes-managed hosts file.\n"
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\n"
        "fe00::0\tip6-mcastprefix\n"
        "fe00::1\tip6-allnodes\n"
        "fe00::2\tip6-allrouters\n"
        f"{ip}\tworker-0.group.{NS}.svc.cluster.local\tworker-0\n"
        "\n"
        "# Entries added by HostAliases.\n"
        "10.1.2.3\tfoo.remote\tbar.remote\n"
        "127.0.0.1\tfoo.local\n"
    )
    fqdn = f"worker-0.group.{NS}.svc.cluster.local"
    assert names.splitlines() == ["worker-0", fqdn, "worker-0"]
    # A pod name longer than 63 characters is cut, without a trailing '-'.
    hosts, _, names = (await finished(env, long_name)).partition("---\n")
    assert names.splitlines() == ["x" * 62] * 3
    assert "x" * 62 + "\n" in hosts


async def test_the_container_writes_its_own_layer_not_the_host(env: Env) -> None:
    mark = f"kubesim-probe-{uuid.uuid4().hex[:12]}"
    host_paths = [
        f"/{mark}",
        f"/usr/{mark}",
        f"/etc/{mark}",
        f"/tmp/{mark}",
        "/checkpoints",
        "/workspace",
    ]
    assert not any(exists(p) for p in host_paths)
    script = (
        f"for p in / /usr /etc /tmp; do echo x > $p/{mark} && echo wrote $p; done; "
        "echo step-7 > /checkpoints/ckpt && cat /checkpoints/ckpt; "
        "mkdir -p /workspace/run && echo ws-ok"
    )
    volumes = [{"name": "ckpt", "emptyDir": {}}, {"name": "ws", "emptyDir": {}}]
    mounts = [
        {"name": "ckpt", "mountPath": "/checkpoints"},
        {"name": "ws", "mountPath": "/workspace"},
    ]
    await env.create(
        script_pod("writer", script, volumeMounts=mounts, pod_spec={"volumes": volumes})
    )
    logs = await finished(env, "writer")
    for where in ("/", "/etc", "/tmp"):
        assert f"wrote {where}\n" in logs  # its own tree is writable inside ...
    assert "wrote /usr\n" not in logs  # the host's system directories are read-only
    assert "step-7\n" in logs and "ws-ok\n" in logs
    for path in host_paths:  # ... and nothing of it on the host
        assert not exists(path), path


async def test_read_only_root_refuses_writes_outside_volumes(env: Env) -> None:
    mark = f"kubesim-probe-{uuid.uuid4().hex[:12]}"
    script = (
        f"touch /usr/{mark}; echo usr=$?; touch /{mark}; echo root=$?; "
        f"touch /tmp/{mark}; echo tmp=$?; touch /data/ok; echo data=$?"
    )
    await env.create(
        script_pod(
            "frozen",
            script,
            securityContext={"readOnlyRootFilesystem": True},
            volumeMounts=[{"name": "data", "mountPath": "/data"}],
            pod_spec={"volumes": [{"name": "data", "emptyDir": {}}]},
        )
    )
    logs = await finished(env, "frozen")
    assert "usr=1\n" in logs and "root=1\n" in logs and "tmp=1\n" in logs
    assert "data=0\n" in logs
    assert not exists(f"/usr/{mark}") and not exists(f"/{mark}")


PIDS = "import os; print(os.getpid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"


async def test_the_container_sees_only_its_own_processes(env: Env) -> None:
    await env.create(
        web_pod("alone", command=[PY, "-c", PIDS], pod_spec={"restartPolicy": "Never"})
    )
    assert await finished(env, "alone") == "1 [1]\n"


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


# Leaves a daemon behind (double fork, setsid: out of the container's process group), with a
# name of this instance's own, notes whether an earlier instance's file is still in
# the root, then fails so that the container restarts.
ESCAPE = """
import os, sys, time
marker = sys.argv[1] + os.urandom(6).hex()
print('layer', 'old' if os.path.exists('/var/layer-mark') else 'fresh', flush=True)
open('/var/layer-mark', 'w').close()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', marker])
    os._exit(0)
os.wait()
print('daemon', marker, flush=True)
time.sleep(float(sys.argv[2]))
sys.exit(1)
"""


async def test_no_process_outlives_its_container(env: Env) -> None:
    token = f"kubesim-daemon-{uuid.uuid4().hex[:12]}-"
    pod = web_pod("escaper", command=[PY, "-c", ESCAPE, token, "1"])
    await env.create(pod)

    def restarted(p: client.V1Pod) -> bool:
        statuses = p.status.container_statuses or []
        return (
            bool(statuses)
            and statuses[0].restart_count >= 1
            and statuses[0].state.running is not None
        )

    await eventually(lambda: env.pod("escaper"), restarted)
    previous = await env.kubectl("logs", "escaper", "--previous")
    assert "layer fresh" in previous
    first = previous.split("daemon ", 1)[1].split()[0]
    assert processes_with(first) == []  # gone with the instance that started it
    current = await eventually(
        lambda: env.kubectl("logs", "escaper"), lambda text: "daemon " in text
    )
    assert "layer fresh" in current  # a restarted container gets a fresh writable layer
    # The first instance's layer went with it (on the host, under the pod's directory).
    uid = (await env.pod("escaper")).metadata.uid
    layers = env.cluster.runtime.bridge.state_dir / "pods" / uid / "containers"
    await eventually(
        lambda: asyncio.to_thread(lambda: sorted(p.name for p in layers.iterdir())),
        lambda names: len(names) == 1 and names[0].startswith("web-1-"),
    )
    await env.core.delete_namespaced_pod("escaper", NS, grace_period_seconds=1)
    await eventually(lambda: env.core.list_namespaced_pod(NS), lambda r: not r.items)
    assert processes_with(token) == []
    assert not exists("/var/layer-mark")


# Capability numbers (linux/capability.h) of containerd's default set and of this test.
CAP_NUMBERS = {
    "CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6,
    "SETUID": 7, "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_ADMIN": 12, "NET_RAW": 13,
    "SYS_CHROOT": 18, "SYS_TIME": 25, "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31,
}  # fmt: skip
DEFAULT_CAPS = (
    "CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP "
    "NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE"
).split()


def cap_mask(names: list[str]) -> int:
    return sum(1 << CAP_NUMBERS[n] for n in names)


def host_bounding_set() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            return int(line.split()[1], 16)
    raise AssertionError("no CapBnd")


async def test_capabilities_follow_the_security_context(env: Env) -> None:
    show = "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"
    contexts: dict[str, dict[str, Any]] = {
        "plain": {},
        "privileged": {"privileged": True},
        "tuned": {
            "capabilities": {"add": ["NET_ADMIN", "CAP_SYS_TIME"], "drop": ["KILL"]},
            "allowPrivilegeEscalation": False,
        },
        "minimal": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
    }
    for name, sc in contexts.items():
        await env.create(script_pod(name, show, securityContext=sc))

    async def status(name: str) -> dict[str, int]:
        lines = (await finished(env, name)).splitlines()
        return {k.rstrip(":"): int(v, 16) for k, v in (line.split() for line in lines)}

    plain = await status("plain")
    assert plain["CapEff"] == plain["CapBnd"] == cap_mask(DEFAULT_CAPS)
    assert plain["NoNewPrivs"] == 0
    privileged = await status("privileged")
    assert privileged["CapEff"] == host_bounding_set()
    tuned = await status("tuned")
    wanted = [c for c in DEFAULT_CAPS if c != "KILL"] + ["NET_ADMIN", "SYS_TIME"]
    assert tuned["CapEff"] == cap_mask(wanted)
    assert tuned["NoNewPrivs"] == 1
    assert (await status("minimal"))["CapEff"] == cap_mask(["NET_BIND_SERVICE"])


BAD_DNS = """
apiVersion: v1
kind: Pod
metadata: {name: bad-dns}
spec:
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.0.0.1, 10.0.0.2, 10.0.0.3, not-an-ip]
    searches: [ok.example, Bad_Name]
    options: [{value: "1"}]
  containers: [{name: web, image: example.com/web:v1}]
"""


async def test_the_api_rejects_a_bad_dns_config_with_its_messages(env: Env) -> None:
    def apply(manifest: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(env.kubeconfig), "apply", "-f", "-"],
            input=manifest,
            capture_output=True,
            text=True,
            timeout=60,
        )

    out = await asyncio.to_thread(apply, BAD_DNS)
    assert out.returncode != 0
    assert 'The Pod "bad-dns" is invalid' in out.stderr
    for message in (
        "spec.dnsConfig.nameservers: Invalid value: []string{"
        '"10.0.0.1", "10.0.0.2", "10.0.0.3", "not-an-ip"}: must not have more than 3 nameservers',
        'spec.dnsConfig.nameservers[3]: Invalid value: "not-an-ip": must be a valid IP address',
        'spec.dnsConfig.searches[1]: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
        "spec.dnsConfig.options[0]: Required value: must not be empty",
    ):
        assert message in out.stderr, out.stderr
    missing = BAD_DNS.replace("    nameservers: [10.0.0.1, 10.0.0.2, 10.0.0.3, not-an-ip]\n", "")
    out = await asyncio.to_thread(apply, missing)
    assert "spec.dnsConfig.nameservers: Required value: must provide at least one DNS " in (
        out.stderr
    )
    out = await asyncio.to_thread(apply, BAD_DNS.replace("dnsPolicy: None", "dnsPolicy: Cluster"))
    assert 'spec.dnsPolicy: Unsupported value: "Cluster": supported values: ' in out.stderr
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bad-dns}\nspec:\n  template:\n"
        "    spec:\n      restartPolicy: Never\n      dnsPolicy: None\n"
        "      containers: [{name: web, image: example.com/web:v1}]\n"
    )
    out = await asyncio.to_thread(apply, job)  # a Job's pod template is checked the same way
    assert (
        "spec.template.spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` "
        "is None" in out.stderr
    ), out.stderr


async def test_a_pod_finds_the_api_server_and_its_peers_by_name(env: Env) -> None:
    """The pod's resolv.conf leads its resolver to the cluster DNS: short names through the
    search path, a headless Service's pods by hostname and subdomain."""
    await env.core.create_namespaced_service(
        NS,
        {
            "metadata": {"name": "group"},
            "spec": {
                "clusterIP": "None",
                "selector": {"app": "web"},
                "publishNotReadyAddresses": True,
            },
        },
    )
    peer = web_pod("peer", pod_spec={"hostname": "peer-0", "subdomain": "group"})
    await env.create(peer)
    ip = (await eventually(lambda: env.pod("peer"), lambda p: bool(p.status.pod_ip))).status.pod_ip
    script = "getent hosts kubernetes.default; getent hosts peer-0.group"
    await env.create(script_pod("asker", script))
    logs = await finished(env, "asker")
    gateway = env.cluster.runtime.api_host
    assert logs.split() == [
        gateway,
        "kubernetes.default.svc.cluster.local",
        ip,
        f"peer-0.group.{NS}.svc.cluster.local",
    ]


async def test_a_container_cannot_read_other_claims_or_the_cluster_state(env: Env) -> None:
    """Claims' volumes are host directories: a pod sees its own claim at its mountPath, and
    neither the other claims nor the simulator's state underneath the host's root."""
    await env.core.create_namespaced_persistent_volume_claim(
        NS,
        {
            "metadata": {"name": "private"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    owner = script_pod(
        "owner",
        "echo s3cret > /data/secret-file && echo stored",
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
        pod_spec={"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "private"}}]},
    )
    await env.create(owner)
    assert await finished(env, "owner") == "stored\n"
    root = env.cluster.volumes_root
    stored = await asyncio.to_thread(lambda: [str(p) for p in root.rglob("secret-file")])
    assert len(stored) == 1  # on the host, in the claim's volume
    state = env.cluster.runtime.bridge.state_dir
    look = (
        f"cat {stored[0]}; test -e {root} && echo sees-volumes; test -e {state} && echo sees-state"
    )
    await env.create(script_pod("snooper", look + "; true"))
    lines = (await finished(env, "snooper")).splitlines()
    assert "s3cret" not in lines
    # Neither the claims' directory nor the simulator's state exists in the container's root.
    assert "sees-volumes" not in lines and "sees-state" not in lines
