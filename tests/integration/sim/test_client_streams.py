"""exec, attach and port-forward of real-process pods as the Python clients speak them: the
official `kubernetes` client (v5 and v4 channels over `websocket-client`, its WebSocket
port-forward) and `kubernetes_asyncio` (v4 over aiohttp), and each of the kubelet's older
channel protocols spoken directly.

Uses the `env` fixture of `test_processes.py` (a `SimCluster` in-process with
`example.com/web` mapped to `realpod/`). Needs root, as those tests do. The synchronous
client runs in a thread, since the simulator shares the test's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import json
import select
import socket
import time
from typing import Any

import aiohttp
import pytest
from kubernetes import client as sync_client
from kubernetes import config as sync_config
from kubernetes.stream import portforward, stream
from kubernetes.stream.ws_client import ERROR_CHANNEL
from kubernetes_asyncio import client
from kubernetes_asyncio.stream import WsApiClient

from tests.eventually import eventually
from tests.integration.sim.test_processes import NS, Env, env, realpod, running, web_pod

__all__ = ["env", "realpod"]  # the fixtures, imported for their use here

# Two echo servers and nothing on 1236, as the kubernetes client's own e2e test has them.
ECHO = """
import socket, threading
def serve(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen()
    while True:
        c, _ = s.accept()
        threading.Thread(target=lambda c=c: [c.sendall(d) for d in iter(lambda: c.recv(4096), b"")] and c.close(), daemon=True).start()
threading.Thread(target=serve, args=(1234,), daemon=True).start()
serve(1235)
"""


def core(env: Env) -> sync_client.CoreV1Api:
    api = sync_client.ApiClient(
        sync_config.new_client_from_config(str(env.kubeconfig)).configuration
    )
    return sync_client.CoreV1Api(api)


async def auth(cfg: client.Configuration) -> dict[str, str]:
    """The headers that authenticate the test's client (the kubeconfig's token)."""
    return {
        setting["key"]: setting["value"]
        for setting in (await cfg.auth_settings()).values()
        if setting["in"] == "header" and setting["value"]
    }


async def sleeper(env: Env, name: str, **container: Any) -> None:
    await env.create(web_pod(name, command=["sh", "-c", "sleep 3600"], **container))
    await eventually(lambda: env.pod(name), running)


async def test_the_kubernetes_client_execs_with_stdin_its_close_and_the_status(
    env: Env,
) -> None:
    await sleeper(env, "w")
    api = core(env)

    def shell() -> None:
        resp = stream(
            api.connect_post_namespaced_pod_exec,
            *("w", NS),
            command=["/bin/sh"],
            stderr=True,
            stdin=True,
            stdout=True,
            tty=False,
            _preload_content=False,
        )
        assert resp.subprotocol == "v5.channel.k8s.io"
        resp.write_stdin("echo test string 1\n")  # a text message
        assert resp.readline_stdout(timeout=10) == "test string 1"
        resp.write_stdin(b"echo test string 2 >&2\n")  # a binary one
        assert resp.readline_stderr(timeout=10) == "test string 2"
        resp.write_stdin("exit 3\n")
        resp.run_forever(timeout=10)
        assert resp.returncode == 3
        assert not resp.is_open()

    def cat_until_stdin_closes() -> None:
        resp = stream(
            api.connect_post_namespaced_pod_exec,
            *("w", NS),
            command=["/bin/sh", "-c", "cat"],
            stderr=True,
            stdin=True,
            stdout=True,
            tty=False,
            _preload_content=False,
        )
        resp.write_stdin("test-close\n")
        assert resp.readline_stdout(timeout=10) == "test-close"
        resp.close_channel(0)
        resp.run_forever(timeout=15)
        assert not resp.is_open()
        assert resp.returncode == 0

    def preloaded() -> str:
        out: str = stream(
            api.connect_get_namespaced_pod_exec,
            *("w", NS),
            command=["/bin/sh", "-c", "for i in 1 2 3; do echo $i; done"],
            stderr=False,
            stdin=False,
            stdout=True,
            tty=False,
        )
        return out

    await asyncio.to_thread(shell)
    await asyncio.to_thread(cat_until_stdin_closes)
    assert await asyncio.to_thread(preloaded) == "1\n2\n3\n"


async def test_the_kubernetes_client_on_v4_writes_the_status_as_json(env: Env) -> None:
    await sleeper(env, "w")
    api = core(env)

    def run() -> tuple[str, str]:
        resp = stream(
            api.connect_post_namespaced_pod_exec,
            *("w", NS),
            command=["/bin/sh", "-c", "read line; echo got $line; exit 4"],
            stderr=True,
            stdin=True,
            stdout=True,
            tty=False,
            _preload_content=False,
            _headers={"sec-websocket-protocol": "v4.channel.k8s.io"},
        )
        assert resp.subprotocol == "v4.channel.k8s.io"
        resp.write_stdin("hello\n")
        line = resp.readline_stdout(timeout=10)
        resp.run_forever(timeout=10)
        return line, resp.read_channel(ERROR_CHANNEL)

    line, error = await asyncio.to_thread(run)
    assert line == "got hello"
    assert json.loads(error) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: "
        "command terminated with exit code 4",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "4"}]},
    }


async def test_kubernetes_asyncio_execs_and_attaches(env: Env) -> None:
    ticker = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"
    await env.create(web_pod("t", command=["sh", "-c", ticker]))
    await eventually(lambda: env.pod("t"), running)
    ws_api = WsApiClient(configuration=env.api.configuration)
    try:
        api = client.CoreV1Api(ws_api)
        out = await api.connect_get_namespaced_pod_exec(
            "t",
            NS,
            command=["/bin/sh", "-c", "echo one; echo two >&2"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
        assert sorted(out.splitlines()) == ["one", "two"]
        ws = await api.connect_get_namespaced_pod_attach(
            "t", NS, stdout=True, stderr=False, stdin=False, tty=False, _preload_content=False
        )
        async with ws as conn:
            assert conn.protocol is None or conn.protocol == "v4.channel.k8s.io"
            seen = b""
            while seen.count(b"\n") < 2:
                msg = await asyncio.wait_for(conn.receive(), 30)
                assert msg.data[0] == 1  # stdout
                seen += msg.data[1:]
            first, second = seen.splitlines()[:2]
            assert int(second.split()[1]) == int(first.split()[1]) + 1
    finally:
        await ws_api.close()


@pytest.mark.parametrize(
    "protocol",
    [
        "v4.channel.k8s.io",
        "v4.base64.channel.k8s.io",
        "channel.k8s.io",
        "base64.channel.k8s.io",
        "",
    ],
)
async def test_each_channel_protocol_frames_stdin_output_and_status(
    env: Env, protocol: str
) -> None:
    await sleeper(env, "w")
    cfg = env.api.configuration
    url = (
        f"{cfg.host}/api/v1/namespaces/{NS}/pods/w/exec?command=sh&command=-c"
        "&command=head+-n1%3B+echo+err+%3E%262%3B+exit+3&stdin=true&stdout=true&stderr=true"
    )
    text = "base64" in protocol
    headers = await auth(cfg)
    if protocol:
        headers["Sec-WebSocket-Protocol"] = protocol
    channels: dict[int, bytes] = {}
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(url, headers=headers, ssl=False) as ws,
    ):
        assert ws._response.headers.get("Sec-WebSocket-Protocol", "") == protocol
        line = b"hello\n"
        await (
            ws.send_str("0" + base64.b64encode(line).decode())
            if text
            else ws.send_bytes(b"\0" + line)
        )
        async for msg in ws:
            if text:
                assert msg.type == aiohttp.WSMsgType.TEXT
                channel, data = int(msg.data[0]), base64.b64decode(msg.data[1:])
            else:
                assert msg.type == aiohttp.WSMsgType.BINARY
                channel, data = msg.data[0], msg.data[1:]
            channels[channel] = channels.get(channel, b"") + data
    assert (channels[1], channels[2]) == (b"hello\n", b"err\n")
    message = b"command terminated with non-zero exit code: command terminated with exit code 3"
    if protocol.startswith("v4"):
        assert json.loads(channels[3])["message"] == message.decode()
    else:  # the older protocols write only a failure's message
        assert channels[3] == message


async def test_the_kubernetes_client_forwards_several_ports_at_once(env: Env) -> None:
    listening = "import socket; socket.create_connection(('127.0.0.1', 1235)).close()"
    await env.create(
        web_pod(
            "echo",
            command=["python3", "-c", ECHO],
            readinessProbe={"exec": {"command": ["python3", "-c", listening]}, "periodSeconds": 1},
        )
    )
    await eventually(
        lambda: env.pod("echo"),
        lambda p: bool(p.status.container_statuses and p.status.container_statuses[0].ready),
    )
    api = core(env)

    def echo(sock: socket.socket, sent: bytes) -> None:
        sock.sendall(sent)
        reply = b""
        deadline = time.monotonic() + 30
        while reply != sent:
            assert time.monotonic() < deadline
            r, _, _ = select.select([sock], [], [], 1)
            if r:
                data = sock.recv(1024)
                assert data, "unexpected close"
                reply += data

    def run(ix: int) -> None:
        pf = portforward(
            api.connect_get_namespaced_pod_portforward, "echo", NS, ports="1234,1235,1236"
        )
        assert pf.connected
        s1, s2 = pf.socket(1234), pf.socket(1235)
        s1.setblocking(True)
        s2.setblocking(True)
        echo(s1, b"test %d port 1234" % ix)
        echo(s2, b"test %d port 1235" % ix)
        refused = pf.socket(1236)
        refused.setblocking(True)
        assert refused.recv(1024) == b""
        assert "error forwarding port 1236 to pod" in (pf.error(1236) or "")
        refused.close()
        echo(s1, b"again %d" % ix)
        s1.close()
        s2.close()
        deadline = time.monotonic() + 10
        while pf.connected:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert (pf.error(1234), pf.error(1235)) == (None, None)

    for ix in range(3):
        await asyncio.to_thread(run, ix)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", 'query parameter "port" is required'),
        ("?ports=", 'query parameter "port" cannot be empty'),
        (
            "?ports=80,x",
            'unable to parse "80,x" as a port: strconv.ParseUint: parsing "x": invalid syntax',
        ),
        (
            "?ports=70000",
            'unable to parse "70000" as a port: strconv.ParseUint: parsing "70000": invalid syntax',
        ),
        ("?ports=0", 'port "0" must be > 0'),
        (  # a digit to str.isdigit, not to strconv
            "?ports=%EF%BC%91",
            'unable to parse "\uff11" as a port: strconv.ParseUint: parsing "\uff11": '
            "invalid syntax",
        ),
    ],
    ids=["missing", "empty", "not-a-number", "too-large", "zero", "unicode-digit"],
)
async def test_a_websocket_port_forward_with_bad_ports_is_refused(
    env: Env, query: str, message: str
) -> None:
    await sleeper(env, "w")
    cfg = env.api.configuration
    headers = {"Sec-WebSocket-Protocol": "v4.channel.k8s.io", **(await auth(cfg))}
    async with aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await s.ws_connect(
                f"{cfg.host}/api/v1/namespaces/{NS}/pods/w/portforward{query}",
                headers=headers,
                ssl=False,
            )
        assert info.value.status == 400
        async with s.get(
            f"{cfg.host}/api/v1/namespaces/{NS}/pods/w/portforward{query}",
            headers={
                **headers,
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            },
            ssl=False,
        ) as r:
            assert (r.status, (await r.json())["message"]) == (400, message)
