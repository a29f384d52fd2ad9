"""The webhook server itself, in-process over real HTTPS: timeouts, hot certificate swap."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from jobset.runtime import http_timers
from jobset.runtime.http_timers import HEADER_TIMEOUT
from jobset.webhooks import certs
from jobset.webhooks.review import MAX_REQUEST_BYTES, AdmissionRequest, AdmissionResponse
from jobset.webhooks.server import ServingCert, WebhookServer

REVIEW: dict[str, Any] = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {"uid": "u-1", "operation": "CREATE", "object": {"metadata": {}}},
}


async def _post(port: int, ca: bytes, path: str) -> dict[str, object]:
    ctx = ssl.create_default_context(cadata=ca.decode())
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"https://localhost:{port}{path}", json=REVIEW, ssl=ctx) as r,
    ):
        assert r.status == 200
        return json.loads(await r.read())  # type: ignore[no-any-return]


async def test_a_slow_handler_is_answered_within_the_timeout() -> None:
    bundle = certs.issue_bundle(["localhost"])
    serving = ServingCert()
    serving.update(bundle.cert, bundle.key)
    server = WebhookServer(serving, host="127.0.0.1", port=0, timeout=0.3)

    async def slow(_: AdmissionRequest) -> AdmissionResponse:
        await asyncio.sleep(5)
        return AdmissionResponse.allow()

    async def fast(_: AdmissionRequest) -> AdmissionResponse:
        return AdmissionResponse.allow("hello")

    server.register("/slow", slow)
    server.register("/fast", fast)
    await server.start()
    try:
        t0 = asyncio.get_running_loop().time()
        review = await _post(server.port, bundle.ca_cert, "/slow")
        assert asyncio.get_running_loop().time() - t0 < 2
        response = review["response"]
        assert isinstance(response, dict)
        assert response["allowed"] is False and response["status"]["code"] == 504
        assert response["uid"] == "u-1"
        ok = await _post(server.port, bundle.ca_cert, "/fast")
        assert ok["response"] == {"uid": "u-1", "allowed": True, "warnings": ["hello"]}
    finally:
        await server.stop()
        serving.close()


async def test_a_new_certificate_is_served_without_restart() -> None:
    old = certs.issue_bundle(["localhost"])
    new = certs.issue_bundle(["localhost"])  # another CA altogether
    serving = ServingCert()
    serving.update(old.cert, old.key)
    server = WebhookServer(serving, host="127.0.0.1", port=0)

    async def allow(_: AdmissionRequest) -> AdmissionResponse:
        return AdmissionResponse.allow()

    server.register("/x", allow)
    await server.start()
    try:
        await _post(server.port, old.ca_cert, "/x")
        assert serving.update(new.cert, new.key)
        await _post(server.port, new.ca_cert, "/x")
        try:
            await _post(server.port, old.ca_cert, "/x")
        except aiohttp.ClientConnectorCertificateError:
            pass
        else:
            raise AssertionError("the old certificate is still served")
    finally:
        await server.stop()
        serving.close()


async def test_a_handler_bug_answers_500_without_its_details() -> None:
    bundle = certs.issue_bundle(["localhost"])
    serving = ServingCert()
    serving.update(bundle.cert, bundle.key)
    server = WebhookServer(serving, host="127.0.0.1", port=0)

    async def buggy(req: AdmissionRequest) -> AdmissionResponse:
        raise KeyError(f"pvc team-b/secret-claim of {req.uid}")  # what a bug might hold

    server.register("/buggy", buggy)
    await server.start()
    try:
        response = (await _post(server.port, bundle.ca_cert, "/buggy"))["response"]
        assert isinstance(response, dict)
        assert response["allowed"] is False and response["status"]["code"] == 500
        message = response["status"]["message"]
        assert "/buggy" in message and "u-1" in message
        assert "secret-claim" not in message and "KeyError" not in message
    finally:
        await server.stop()
        serving.close()


async def test_an_oversized_chunked_body_is_denied_413_and_a_fitting_one_served() -> None:
    """Without a Content-Length the size is only known while reading: the server stops at
    the limit and still answers with an AdmissionReview, and counts the answers."""
    bundle = certs.issue_bundle(["localhost"])
    serving = ServingCert()
    serving.update(bundle.cert, bundle.key)
    registry = CollectorRegistry()
    server = WebhookServer(serving, host="127.0.0.1", port=0, registry=registry)

    async def allow(_: AdmissionRequest) -> AdmissionResponse:
        return AdmissionResponse.allow()

    server.register("/x", allow)
    await server.start()
    ctx = ssl.create_default_context(cadata=bundle.ca_cert.decode())

    async def chunks(body: bytes) -> AsyncIterator[bytes]:
        for i in range(0, len(body), 1 << 20):
            yield body[i : i + (1 << 20)]

    big = json.dumps(
        {**REVIEW, "request": {**REVIEW["request"], "object": {"x": "a" * MAX_REQUEST_BYTES}}}
    ).encode()
    try:
        async with aiohttp.ClientSession() as s:
            for body, allowed in ((json.dumps(REVIEW).encode(), True), (big, False)):
                async with s.post(
                    f"https://localhost:{server.port}/x",
                    data=chunks(body),
                    headers={"Content-Type": "application/json"},
                    ssl=ctx,
                ) as r:
                    assert r.status == 200 and "Content-Length" not in r.request_info.headers
                    response = json.loads(await r.read())["response"]
                assert response["allowed"] is allowed
                if not allowed:
                    assert response["status"]["code"] == 413
                    assert "too large" in response["status"]["message"]
        counted = {"webhook": "/x", "code": "200"}
        assert registry.get_sample_value("controller_runtime_webhook_requests_total", counted) == 2
        latency = "controller_runtime_webhook_latency_seconds_count"
        assert registry.get_sample_value(latency, {"webhook": "/x"}) == 2
    finally:
        await server.stop()
        serving.close()


def _raw_review(path: str) -> bytes:
    body = json.dumps(REVIEW).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read_answer(reader: asyncio.StreamReader) -> int:
    """One HTTP/1.1 answer off a kept-alive connection: its status code."""
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _served() -> tuple[WebhookServer, bytes, ServingCert]:
    bundle = certs.issue_bundle(["localhost"])
    serving = ServingCert()
    serving.update(bundle.cert, bundle.key)
    server = WebhookServer(serving, host="127.0.0.1", port=0)

    async def allow(_: AdmissionRequest) -> AdmissionResponse:
        return AdmissionResponse.allow()

    server.register("/x", allow)
    await server.start()
    return server, bundle.ca_cert, serving


async def test_an_idle_kept_alive_connection_outlives_the_header_timeout() -> None:
    """kube-apiserver keeps an idle webhook connection 90 s and writes its next review onto it:
    the server must not close it first (the API server would see "EOF", a failed admission).
    Idle past HEADER_TIMEOUT (which used to be the idle timer too), the connection answers."""
    server, ca, serving = await _served()
    ctx = ssl.create_default_context(cadata=ca.decode())
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.port, ssl=ctx, server_hostname="localhost"
    )
    try:
        writer.write(_raw_review("/x"))
        assert await _read_answer(reader) == 200
        await asyncio.sleep(HEADER_TIMEOUT + 1.5)
        assert not reader.at_eof(), "the server closed an idle kept-alive connection"
        writer.write(_raw_review("/x"))
        assert await _read_answer(reader) == 200  # the same connection
    finally:
        writer.close()
        await server.stop()
        serving.close()


async def test_late_headers_close_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers still bounded: a new connection that sends nothing, and a kept-alive one whose
    next request trickles in a byte at a time, are both closed after the header timeout."""
    monkeypatch.setattr(http_timers.HeaderTimedHandler, "header_timeout", 0.5)
    server, ca, serving = await _served()
    ctx = ssl.create_default_context(cadata=ca.decode())
    try:
        loop = asyncio.get_running_loop()
        silent_r, silent_w = await asyncio.open_connection(
            "127.0.0.1", server.port, ssl=ctx, server_hostname="localhost"
        )
        t0 = loop.time()
        assert await asyncio.wait_for(silent_r.read(), 10) == b""  # closed by the server
        assert loop.time() - t0 < 5
        silent_w.close()

        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.port, ssl=ctx, server_hostname="localhost"
        )
        writer.write(_raw_review("/x"))
        assert await _read_answer(reader) == 200
        await asyncio.sleep(1.0)  # idle past the header timeout: still open
        t0 = loop.time()
        closed_after = None
        for byte in _raw_review("/x")[:40]:
            if reader.at_eof():
                closed_after = loop.time() - t0
                break
            writer.write(bytes([byte]))
            await asyncio.sleep(0.1)
            with contextlib.suppress(TimeoutError):
                if await asyncio.wait_for(reader.read(1), 0.01) == b"":
                    closed_after = loop.time() - t0
                    break
        assert closed_after is not None, "a trickling request was never cut off"
        assert closed_after < 3.5
        writer.close()
    finally:
        await server.stop()
        serving.close()
