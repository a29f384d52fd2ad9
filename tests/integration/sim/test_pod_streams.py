"""Streams of real-process pods through the real kubectl: `exec`, `cp`, `port-forward` and
`logs -f`, and the pod network's bridge that carries them.

Uses the `env` fixture of `test_processes.py` (a `SimCluster` in-process with
`example.com/web` mapped to `realpod/`). Needs root, as those tests do.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import logging
import os
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from kubesim.kubelet.network import bridge_mac
from tests.eventually import eventually
from tests.integration.sim.test_processes import (
    NS,
    Env,
    env,
    http,
    realpod,
    running,
    web_pod,
)

__all__ = ["env", "realpod"]  # the fixtures, imported for their use here

pytestmark = [pytest.mark.kubectl]


def _mac(name: str) -> str:
    return Path(f"/sys/class/net/{name}/address").read_text().strip()


async def test_bridge_keeps_its_fixed_mac_as_pods_come_and_go(env: Env) -> None:
    bridge = env.cluster.runtime.bridge
    mac = bridge_mac(bridge.index)
    assert _mac(bridge.name) == mac
    for name in ("m1", "m2"):
        await env.create(web_pod(name))
    for name in ("m1", "m2"):
        await eventually(functools.partial(env.pod, name), running)
        assert _mac(bridge.name) == mac
    await env.core.delete_namespaced_pod("m1", NS, grace_period_seconds=0)
    await eventually(lambda: env.core.list_namespaced_pod(NS), lambda r: len(r.items) == 1)
    await eventually(lambda: asyncio.to_thread(lambda: len(bridge.pods)), lambda n: n == 1)
    assert _mac(bridge.name) == mac


def _ready(p: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])


def _terminated(p: client.V1Pod) -> bool:
    return any(cs.state.terminated for cs in p.status.container_statuses or [])


async def test_logs_follow_of_a_pod_deleted_as_it_exits_ends_cleanly(env: Env) -> None:
    script = "echo first; sleep 1; echo last words; exit 3"
    await env.create(
        web_pod("talker", command=["sh", "-c", script], pod_spec={"restartPolicy": "Never"})
    )
    await eventually(lambda: env.pod("talker"), running)
    follow = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), "logs", "-f", "talker"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert follow.stdout is not None
    assert await follow.stdout.readline() == b"first\n"
    # The pod object goes (its log directory with it) as soon as its container has exited,
    # while the follow is still open.
    await eventually(lambda: env.pod("talker"), _terminated, interval=0.01)
    await env.core.delete_namespaced_pod("talker", NS, grace_period_seconds=0)
    out, err = await asyncio.wait_for(follow.communicate(), 60)
    assert (follow.returncode, out, err) == (0, b"last words\n", b"")


async def test_logs_follow_ends_quietly_when_its_client_goes(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    script = "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.05; done"
    await env.create(web_pod("chatty", command=["sh", "-c", script]))
    await eventually(lambda: env.pod("chatty"), running)
    follow = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), "logs", "-f", "chatty"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert follow.stdout is not None
    assert (await follow.stdout.readline()).startswith(b"line ")
    follow.kill()
    await follow.wait()
    await asyncio.sleep(1)  # the container keeps writing; the server sees the client gone
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    # The server is no worse for it: another follow gets the lines.
    rc, out, err = await kubectl(env, "logs", "--tail=1", "chatty")
    assert (rc, out[:5]) == (0, "line "), err


# kubectl 1.32 upgrades to WebSocket; these variables make it use SPDY, its fallback and what
# older clients speak.
SPDY_ONLY = {
    "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false",
    "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false",
}


@pytest.fixture(params=[{}, SPDY_ONLY], ids=["websocket", "spdy"])
def protocol(request: pytest.FixtureRequest) -> dict[str, str]:
    return {**os.environ, **request.param}


async def kubectl(
    env: Env, *args: str, stdin: bytes = b"", environ: dict[str, str] | None = None
) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def running_pod(env: Env, name: str, **container: object) -> None:
    await env.create(web_pod(name, **container))
    await eventually(lambda: env.pod(name), running)


async def test_exec_enters_the_container_and_reports_its_exit_code(
    env: Env, protocol: dict[str, str]
) -> None:
    await running_pod(env, "w")
    # The pod's own UTS namespace: the command runs inside the container.
    rc, out, err = await kubectl(env, "exec", "w", "-v=6", "--", "hostname", environ=protocol)
    assert (rc, out) == (0, "w\n"), err
    if protocol.get("KUBECTL_REMOTE_COMMAND_WEBSOCKETS") == "false":
        assert re.search(r"POST \S+/pods/w/exec\S* 101 Switching Protocols", err), err
    else:
        assert re.search(r"GET \S+/pods/w/exec\S* 101 Switching Protocols", err), err
    rc, out, err = await kubectl(
        env, "exec", "w", "--", "sh", "-c", "echo $HOSTNAME-$PWD", environ=protocol
    )
    assert (rc, out) == (0, "w-/\n"), err
    # Its root (the kubelet's /etc/hostname) and its PID namespace (PID 1 is the container's
    # command, the exec a process beside it).
    rc, out, err = await kubectl(env, "exec", "w", "--", "cat", "/etc/hostname", environ=protocol)
    assert (rc, out) == (0, "w\n"), err
    script = "tr '\\0' ' ' < /proc/1/cmdline; echo; echo $$"
    rc, out, err = await kubectl(env, "exec", "w", "--", "sh", "-c", script, environ=protocol)
    init, pid = out.splitlines()
    assert (rc, init.split()[-1:]) == (0, [str(env.realpod / "web")]), err
    assert 1 < int(pid) < 100
    rc, out, err = await kubectl(
        env, "exec", "w", "--", "sh", "-c", "echo out; echo oops >&2; exit 3", environ=protocol
    )
    assert (rc, out) == (3, "out\n")
    assert err == "oops\ncommand terminated with exit code 3\n"
    rc, out, err = await kubectl(env, "exec", "w", "-c", "nope", "--", "true", environ=protocol)
    assert (rc, err) == (
        1,
        "Error from server (BadRequest): container nope is not valid for pod w\n",
    )


async def test_exec_with_stdin_gets_its_input_and_end(env: Env, protocol: dict[str, str]) -> None:
    await running_pod(env, "w")
    rc, out, err = await kubectl(
        *(env, "exec", "-i", "w", "--", "sh", "-c", "cat; echo done"),
        stdin=b"hello\nworld\n",
        environ=protocol,
    )
    assert (rc, out, err) == (0, "hello\nworld\ndone\n", "")


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _take_terminal() -> None:
    """In the child, after setsid: the terminal on fd 0 becomes the controlling one, so that
    kubectl gets SIGWINCH when its size changes."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """kubectl on a pseudo-terminal of the test's, read to the next match of a pattern."""

    def __init__(self, *args: str, environ: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        _set_size(slave, 33, 111)
        self.proc = subprocess.Popen(
            args,
            env=environ,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)
        self.seen = b""

    def _read_until(self, pattern: bytes) -> re.Match[bytes]:
        while (match := re.search(pattern, self.seen)) is None:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                raise AssertionError(f"no {pattern!r} in {self.seen!r}")
            self.seen += chunk
        self.seen = self.seen[match.end() :]
        return match

    async def expect(self, pattern: bytes) -> re.Match[bytes]:
        return await asyncio.wait_for(asyncio.to_thread(self._read_until, pattern), 60)

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    async def close(self) -> int:
        code = await asyncio.to_thread(self.proc.wait, 60)
        os.close(self.master)
        return code


async def test_exec_with_a_tty_follows_the_terminal_size(
    env: Env, protocol: dict[str, str]
) -> None:
    await running_pod(env, "w")
    script = "tty; stty size; while read line; do stty size; done"
    term = Terminal(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), "exec", "-it", "w"),
        *("--", "sh", "-c", script),
        environ=protocol,
    )
    assert (await term.expect(rb"(/dev/pts/\d+)\r\n")).group(1)
    await term.expect(rb"33 111\r\n")
    _set_size(term.master, 44, 122)  # kubectl gets SIGWINCH and sends the new size
    while True:  # each line makes the shell print its terminal's size again
        term.type(b"\r")
        if (await term.expect(rb"(\d+ \d+)\r\n")).group(1) == b"44 122":
            break
    term.type(b"\x04")  # end of file on the remote terminal: the loop ends
    assert await term.close() == 0


async def test_cp_copies_into_and_out_of_the_container(env: Env, tmp_path: Path) -> None:
    await running_pod(
        env,
        "w",
        volumeMounts=[{"name": "work", "mountPath": "/srv/exec-work"}],
        pod_spec={"volumes": [{"name": "work", "emptyDir": {}}]},
    )
    local = tmp_path / "in.txt"
    local.write_bytes(b"line one\nline two\n")
    rc, _, err = await kubectl(env, "cp", str(local), "w:/srv/exec-work/in.txt")
    assert rc == 0, err
    rc, out, err = await kubectl(env, "exec", "w", "--", "cat", "/srv/exec-work/in.txt")
    assert (rc, out) == (0, "line one\nline two\n"), err
    assert not await asyncio.to_thread(Path("/srv/exec-work").exists)  # the pod's mount only
    back = tmp_path / "back.txt"
    rc, _, err = await kubectl(env, "cp", "w:/srv/exec-work/in.txt", str(back))
    assert rc == 0, err
    assert back.read_bytes() == b"line one\nline two\n"


async def test_port_forward_reaches_a_server_on_the_pods_localhost(
    env: Env, protocol: dict[str, str]
) -> None:
    listening = "import socket; socket.create_connection(('127.0.0.1', 9090)).close()"
    await running_pod(
        env,
        "lo",
        command=["python3", "-m", "http.server", "--bind", "127.0.0.1", "9090"],
        readinessProbe={"exec": {"command": ["python3", "-c", listening]}, "periodSeconds": 1},
    )
    await eventually(lambda: env.pod("lo"), _ready)
    forward = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), "port-forward", "pod/lo", ":9090"),
        env=protocol,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert forward.stdout is not None
        line = await asyncio.wait_for(forward.stdout.readline(), 60)
        match = re.match(rb"Forwarding from 127.0.0.1:(\d+) -> 9090", line)
        assert match, line
        for _ in range(3):  # one connection after the other on the same session
            status, body = await http(f"http://127.0.0.1:{int(match.group(1))}/")
            assert status == 200
            assert b"Directory listing" in body
    finally:
        forward.terminate()
        await forward.wait()


async def test_exec_and_port_forward_need_their_rbac_permissions(env: Env) -> None:
    await running_pod(env, "w")
    await env.core.create_namespaced_service_account(NS, {"metadata": {"name": "viewer"}})
    rbac = client.RbacAuthorizationV1Api(env.api)
    await rbac.create_namespaced_role(
        NS,
        {
            "metadata": {"name": "viewer"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
    )
    await rbac.create_namespaced_role_binding(
        NS,
        {
            "metadata": {"name": "viewer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "viewer"},
            "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": NS}],
        },
    )
    token = (
        await env.core.create_namespaced_service_account_token("viewer", NS, {"spec": {}})
    ).status.token
    rc, _, err = await kubectl(env, "--token", token, "exec", "w", "--", "true")
    assert rc == 1
    assert (
        'Error from server (Forbidden): pods "w" is forbidden: User '
        '"system:serviceaccount:default:viewer" cannot create resource "pods/exec" in API '
        'group "" in the namespace "default"'
    ) in err
    rc, _, err = await kubectl(env, "--token", token, "port-forward", "pod/w", ":8080")
    assert rc == 1
    assert 'cannot create resource "pods/portforward"' in err
    # As in Kubernetes 1.32 (before AuthorizePodWebsocketUpgradeCreatePermission), the
    # WebSocket form is a GET: `get` on pods/exec is enough for it, the SPDY form needs create.
    await rbac.patch_namespaced_role(
        "viewer",
        NS,
        [
            {
                "op": "add",
                "path": "/rules/-",
                "value": {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get"]},
            }
        ],
    )
    rc, out, err = await kubectl(env, "--token", token, "exec", "w", "--", "hostname")
    assert (rc, out) == (0, "w\n"), err
    rc, _, err = await kubectl(
        *(env, "--token", token, "exec", "w", "--", "hostname"),
        environ={**os.environ, **SPDY_ONLY},
    )
    assert rc == 1
    assert 'cannot create resource "pods/exec"' in err


async def test_exec_into_a_simulated_pod_fails_as_without_a_runtime(
    env: Env, protocol: dict[str, str]
) -> None:
    pod = web_pod("sim")
    pod["spec"]["containers"][0]["image"] = "busybox"
    await env.create(pod)
    await eventually(lambda: env.pod("sim"), lambda p: p.status.phase == "Running")
    rc, out, err = await kubectl(env, "exec", "sim", "--", "true", environ=protocol)
    assert (rc, out) == (1, "")
    # kube-apiserver 1.32 translates a WebSocket exec to SPDY for the kubelet and reports the
    # kubelet's refusal as an internal error; a SPDY exec gets the kubelet's answer itself.
    failure = 'unable to upgrade connection: container not found ("web")'
    if protocol.get("KUBECTL_REMOTE_COMMAND_WEBSOCKETS") == "false":
        assert err == f"error: {failure}\n"
    else:
        assert err == f"error: Internal error occurred: {failure}\n"


async def test_attach_streams_what_the_container_writes(env: Env) -> None:
    script = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"
    await running_pod(env, "ticker", command=["sh", "-c", script])
    attach = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), "attach", "ticker"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert attach.stdout is not None
        first = await asyncio.wait_for(attach.stdout.readline(), 60)
        second = await asyncio.wait_for(attach.stdout.readline(), 60)
        n = int(first.split()[1])
        assert (first, second) == (f"tick {n}\n".encode(), f"tick {n + 1}\n".encode())
    finally:
        attach.terminate()
        await attach.wait()
