"""The quick read-only connection (`jobset.sdk.quickclient`) over a real TLS socket.

The simulated API server authenticates with tokens only, so the client-certificate path is
checked against a small HTTPS server here that requires a certificate from its CA (the
handshake is real; the answers are canned: what kube-apiserver would send for a list and for
a NotFound, chunked and not, then a `Connection: close`)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
from pathlib import Path

import pytest
import yaml

from jobset.runtime.apitypes import NODES, ApiError
from jobset.sdk.quickclient import QuickClient, quick_config
from kubeutil.tls import (
    issue_client_cert,
    issue_serving_cert,
    make_ca,
    peer_common_name,
    require_client_certs,
    server_context,
)

DAY = dt.timedelta(days=1)


def _b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


async def _serve(ca: tuple[bytes, bytes], seen: list[tuple[str, str, str]]) -> asyncio.Server:
    cert, key = issue_serving_cert(*ca, ["api.internal"], DAY)
    ctx = server_context(cert, key)
    require_client_certs(ctx, ca[0])

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            headers = {}
            while (h := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = h.decode().partition(":")
                headers[name.lower()] = value.strip()
            cn = peer_common_name(writer.get_extra_info("peercert")) or ""
            seen.append((line.decode().strip(), cn, headers.get("user-agent", "")))
            if b"/nodes/x" not in line:
                body = json.dumps({"kind": "NodeList", "items": [{"metadata": {"name": "n"}}]})
                half = len(body) // 2
                chunks = [body[:half], body[half:]]
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                for chunk in chunks:
                    writer.write(f"{len(chunk):x}\r\n{chunk}\r\n".encode())
                writer.write(b"0\r\n\r\n")
            else:
                status = {"kind": "Status", "code": 404, "reason": "NotFound",
                          "message": 'nodes "x" not found'}  # fmt: skip
                body = json.dumps(status)
                writer.write(
                    f"HTTP/1.1 404 Not Found\r\nContent-Length: {len(body)}\r\n"
                    f"Connection: close\r\n\r\n{body}".encode()
                )
                await writer.drain()
                break
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)


async def test_client_certificate_ca_data_and_keep_alive(tmp_path: Path) -> None:
    ca = make_ca("test-ca", DAY)
    client_cert, client_key = issue_client_cert(*ca, "alice", DAY)
    seen: list[tuple[str, str, str]] = []
    server = await _serve(ca, seen)
    port = server.sockets[0].getsockname()[1]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {
            "server": f"https://127.0.0.1:{port}", "tls-server-name": "api.internal",
            "certificate-authority-data": _b64(ca[0])}}],
        "users": [{"name": "u", "user": {
            "client-certificate-data": _b64(client_cert), "client-key-data": _b64(client_key)}}],
    }  # fmt: skip
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    quick = quick_config(str(path), None)
    assert quick is not None
    client = QuickClient(quick, "jobset/test")
    try:
        page = await client.list(NODES, label_selector="a=b", limit=5)
        assert [n["metadata"]["name"] for n in page["items"]] == ["n"]
        with pytest.raises(ApiError) as info:
            await client.request("GET", NODES.path(name="x"))
        assert info.value.not_found and info.value.message == 'nodes "x" not found'
        # The server closed after its 404: the next request gets a new connection.
        assert (await client.list(NODES))["kind"] == "NodeList"
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
    assert seen == [
        ("GET /api/v1/nodes?labelSelector=a%3Db&limit=5 HTTP/1.1", "alice", "jobset/test"),
        ("GET /api/v1/nodes/x HTTP/1.1", "alice", "jobset/test"),
        ("GET /api/v1/nodes HTTP/1.1", "alice", "jobset/test"),
    ]


def test_what_it_leaves_to_the_full_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def kubeconfig(user: dict[str, object], cluster: dict[str, object] | None = None) -> str:
        config = {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "clusters": [{"name": "k", "cluster": cluster or {"server": "https://h:6443"}}],
            "users": [{"name": "u", "user": user}],
        }
        path = tmp_path / f"k{len(list(tmp_path.iterdir()))}"
        path.write_text(yaml.safe_dump(config))
        return str(path)

    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    (tmp_path / "token").write_text("s3cret\n")
    plain = quick_config(kubeconfig({"tokenFile": "token"}, {"server": "http://h:8080"}), None)
    assert plain is not None and (plain.host, plain.port, plain.token) == ("h", 8080, "s3cret")
    exec_user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "gcloud"}}
    assert quick_config(kubeconfig(exec_user), None) is None
    assert quick_config(kubeconfig({"username": "a", "password": "b"}), None) is None
    proxied = {"server": "http://h:8080", "proxy-url": "http://proxy:3128"}
    assert quick_config(kubeconfig({}, proxied), None) is None
    assert quick_config(kubeconfig({}, {"server": "https://h/prefix"}), None) is None
    assert quick_config(str(tmp_path / "missing"), None) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert quick_config(kubeconfig({}, {"server": "http://h:8080"}), None) is None
