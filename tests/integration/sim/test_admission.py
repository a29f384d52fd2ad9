"""Admission webhooks of the simulated API server, called over HTTPS like kube-apiserver calls them.

Each test runs a `SimCluster` in-process and a small aiohttp HTTPS webhook server with its own
CA on 127.0.0.1, registers webhook configurations through the real HTTP API with
kubernetes_asyncio (the controller's own client), and checks what the webhook received and
what the client sees. One test uses the real kubectl to check the error and warning text.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.apiserver import certs
from kubesim.apiserver.core.webhookclient import CONNECTIONS_PER_HOST
from kubesim.cluster import SimCluster, SimOptions
from kubesim.process import free_port

pytestmark = [pytest.mark.timeout(60), pytest.mark.kubectl]

Handler = Callable[[dict[str, Any]], Awaitable[Any] | Any]
SVC_HOST = "hooks.default.svc"


@dataclass
class HookServer:
    """A webhook server: what it received per path, and how each path answers."""

    url: str
    port: int
    ca_pem: bytes
    reviews: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    handlers: dict[str, Handler] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    peers: set[Any] = field(default_factory=set)  # (host, port) of each connection served

    def calls(self, path: str) -> list[dict[str, Any]]:
        """The AdmissionRequests received on `path`."""
        return [r["request"] for r in self.reviews.get(path, [])]


def allow(**extra: Any) -> Handler:
    return lambda _req: {"allowed": True, **extra}


def patch(ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(ops).encode()).decode(),
    }


@pytest.fixture
async def hooks() -> AsyncIterator[HookServer]:
    ca_cert, ca_key = certs.make_ca("test-webhook-ca")
    cert, key = certs.make_serving_cert(ca_cert, ca_key, ["127.0.0.1", "localhost", SVC_HOST])
    server = HookServer(url="", port=0, ca_pem=ca_cert)

    async def handle(request: web.Request) -> web.StreamResponse:
        review = await request.json()
        if request.transport is not None:
            server.peers.add(request.transport.get_extra_info("peername"))
        server.reviews.setdefault(request.path, []).append(review)
        handler = server.handlers.get(request.path, allow())
        answer: Any = handler(review["request"])
        if asyncio.iscoroutine(answer):
            answer = await answer
        if isinstance(answer, web.StreamResponse):
            return answer
        response = {"uid": review["request"]["uid"], **answer}
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certs.server_ssl_context(cert, key))
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    server.port = sockets[0].getsockname()[1]
    server.url = f"https://127.0.0.1:{server.port}"
    yield server
    server.release.set()
    await runner.cleanup()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[SimCluster]:
    sim = SimCluster(SimOptions(port=0, kubeconfig=str(tmp_path / "kc"), sim_level="none"))
    await sim.start()
    yield sim
    await sim.stop()


@pytest.fixture
async def api(cluster: SimCluster) -> AsyncIterator[client.ApiClient]:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=cluster.kubeconfig, client_configuration=cfg)
    async with client.ApiClient(cfg) as api_client:
        yield api_client


def webhook(
    name: str,
    server: HookServer,
    path: str,
    *,
    resources: tuple[str, ...] = ("configmaps",),
    operations: tuple[str, ...] = ("CREATE",),
    failure: str = "Fail",
    ca: bytes | None = None,
    url: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {
            "url": url or f"{server.url}{path}",
            "caBundle": base64.b64encode(ca or server.ca_pem).decode(),
        },
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": list(operations),
                "resources": list(resources),
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": failure,
        **extra,
    }


async def register(
    api: client.ApiClient, name: str, *hooks_: dict[str, Any], mutating: bool = False
) -> None:
    reg = client.AdmissionregistrationV1Api(api)
    kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
    body: Any = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks_),
    }
    if mutating:
        await reg.create_mutating_webhook_configuration(body)
    else:
        await reg.create_validating_webhook_configuration(body)


async def create_cm(
    api: client.ApiClient,
    name: str,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    body: Any = {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": "v"}}
    return await client.CoreV1Api(api).create_namespaced_config_map(namespace, body, **kwargs)


async def rejected(awaitable: Awaitable[Any]) -> tuple[int, dict[str, Any]]:
    """The HTTP code and Status body of a request that must fail."""
    with pytest.raises(ApiException) as info:
        await awaitable
    return info.value.status, json.loads(info.value.body or b"{}")


async def kubectl(cluster: SimCluster, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run the real kubectl without blocking the event loop the cluster is served from."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        *args,
        env={**os.environ, "KUBECONFIG": cluster.kubeconfig},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 30)
    return proc.returncode or 0, out.decode(), err.decode()


# ---------------------------------------------------------------------------------- validating


async def test_validating_webhook_receives_review_and_denies(
    cluster: SimCluster, api: client.ApiClient, hooks: HookServer
) -> None:
    def decide(req: dict[str, Any]) -> dict[str, Any]:
        if req["name"].startswith("bad"):
            return {"allowed": False, "status": {"code": 403, "message": "no bad names"}}
        return {"allowed": True, "warnings": ["configmaps are watched"]}

    hooks.handlers["/validate"] = decide
    await register(api, "deny-bad", webhook("deny.example.com", hooks, "/validate"))

    await create_cm(api, "good", labels={"app": "x"})
    (req,) = hooks.calls("/validate")
    review = hooks.reviews["/validate"][0]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    assert req["uid"]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
    assert req["operation"] == "CREATE"
    assert (req["name"], req["namespace"]) == ("good", "default")
    assert req["object"]["data"] == {"k": "v"}
    assert req["object"]["metadata"]["labels"] == {"app": "x"}
    assert req["object"]["metadata"]["uid"]
    assert req["oldObject"] is None
    assert req["dryRun"] is False
    assert req["options"]["kind"] == "CreateOptions"
    assert req["options"]["apiVersion"] == "meta.k8s.io/v1"
    assert req["userInfo"]["username"] == "admin"

    code, status = await rejected(create_cm(api, "bad-one"))
    assert code == 403
    assert status["reason"] == "Forbidden"
    assert (
        status["message"] == 'admission webhook "deny.example.com" denied the request: no bad names'
    )
    configmaps = cluster.registry.get("", "v1", "configmaps")
    assert configmaps is not None
    assert cluster.core.try_get(configmaps, "default", "bad-one") is None

    # The same through the real kubectl: its error line, and the webhook's warning.
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad-two, namespace: default}\n"
    rc, _, err = await kubectl(cluster, "apply", "-f", "-", stdin=manifest)
    assert rc != 0
    assert (
        'Error from server (Forbidden): error when creating "STDIN": admission webhook '
        '"deny.example.com" denied the request: no bad names' in err
    )
    rc, _, err = await kubectl(cluster, "create", "configmap", "fine", "-n", "default")
    assert rc == 0
    assert "Warning: configmaps are watched" in err


async def test_denial_without_code_or_message(api: client.ApiClient, hooks: HookServer) -> None:
    hooks.handlers["/v"] = lambda _r: {"allowed": False}
    await register(api, "bare", webhook("bare.example.com", hooks, "/v"))
    code, status = await rejected(create_cm(api, "any"))
    assert code == 403
    assert (
        status["message"]
        == 'admission webhook "bare.example.com" denied the request without explanation'
    )


async def test_validating_webhook_on_delete(api: client.ApiClient, hooks: HookServer) -> None:
    hooks.handlers["/del"] = lambda r: {
        "allowed": r["oldObject"]["metadata"]["name"] != "keep",
        "status": {"message": "this one stays"},
    }
    await create_cm(api, "keep")
    await create_cm(api, "drop")
    await register(
        api, "guard", webhook("guard.example.com", hooks, "/del", operations=("DELETE",))
    )
    core = client.CoreV1Api(api)
    code, status = await rejected(core.delete_namespaced_config_map("keep", "default"))
    assert code == 403 and "this one stays" in status["message"]
    await core.delete_namespaced_config_map("drop", "default", propagation_policy="Background")
    keep, drop = hooks.calls("/del")
    assert keep["operation"] == "DELETE" and keep["object"] is None
    assert keep["oldObject"]["metadata"]["name"] == "keep"
    assert drop["options"]["kind"] == "DeleteOptions"
    assert drop["options"]["propagationPolicy"] == "Background"


# ---------------------------------------------------------------------------------- mutating


async def test_mutating_webhooks_patch_in_order_before_validation(
    api: client.ApiClient, hooks: HookServer
) -> None:
    hooks.handlers["/add-team"] = lambda _r: patch(
        [{"op": "add", "path": "/metadata/labels/team", "value": "ml"}]
    )

    def copy_team(req: dict[str, Any]) -> dict[str, Any]:
        team = req["object"]["metadata"]["labels"]["team"]  # set by the earlier webhook
        return patch([{"op": "add", "path": "/data/team", "value": team}])

    hooks.handlers["/copy-team"] = copy_team
    # Configurations run in name order: "a-..." before "b-...".
    await register(api, "b-copy", webhook("copy.example.com", hooks, "/copy-team"), mutating=True)
    await register(api, "a-label", webhook("label.example.com", hooks, "/add-team"), mutating=True)
    await register(api, "check", webhook("check.example.com", hooks, "/check"))

    created = await create_cm(api, "mutated", labels={"app": "x"})
    assert created.metadata.labels == {"app": "x", "team": "ml"}
    assert created.data == {"k": "v", "team": "ml"}
    stored = await client.CoreV1Api(api).read_namespaced_config_map("mutated", "default")
    assert stored.metadata.labels["team"] == "ml"
    (seen,) = hooks.calls("/check")
    assert seen["object"]["metadata"]["labels"]["team"] == "ml"  # validation sees the result


async def test_a_mutated_custom_resource_is_pruned_and_defaulted_again(
    api: client.ApiClient, hooks: HookServer
) -> None:
    """What a mutating webhook adds is pruned and defaulted as the request body was; an
    object no webhook patched is stored as it was prepared (the steps are not run twice)."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer", "default": 3},
                                        "color": {"type": "string"},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    await client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    hooks.handlers["/widget"] = lambda r: (
        patch(
            [
                {"op": "remove", "path": "/spec/size"},  # defaulted again
                {"op": "add", "path": "/spec/unknown", "value": "x"},  # pruned
                {"op": "add", "path": "/spec/color", "value": "red"},
            ]
        )
        if r["object"]["metadata"]["name"] == "patched"
        else {"allowed": True}
    )
    rule = {
        "apiGroups": ["example.com"],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["widgets"],
    }
    await register(
        api, "widgets", webhook("widget.example.com", hooks, "/widget", rules=[rule]), mutating=True
    )
    objects = client.CustomObjectsApi(api)

    async def create(name: str, spec: dict[str, Any]) -> Any:
        body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}
        return await objects.create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", {**body, "spec": spec}
        )

    patched = await create("patched", {"size": 5, "more": 1})
    assert patched["spec"] == {"size": 3, "color": "red"}
    plain = await create("plain", {"more": 1, "color": "blue"})
    assert plain["spec"] == {"size": 3, "color": "blue"}
    assert [r["object"]["spec"] for r in hooks.calls("/widget")] == [
        {"size": 5},
        {"size": 3, "color": "blue"},
    ]  # the webhooks saw the request pruned and defaulted


async def test_reinvocation_if_needed(api: client.ApiClient, hooks: HookServer) -> None:
    hooks.handlers["/late"] = lambda _r: patch(
        [{"op": "add", "path": "/metadata/labels/late", "value": "yes"}]
    )
    await register(
        api,
        "a-early",
        webhook("early.example.com", hooks, "/early", reinvocationPolicy="IfNeeded"),
        mutating=True,
    )
    await register(api, "b-late", webhook("late.example.com", hooks, "/late"), mutating=True)
    await create_cm(api, "twice")
    first, second = hooks.calls("/early")
    assert "late" not in (first["object"]["metadata"].get("labels") or {})
    assert second["object"]["metadata"]["labels"]["late"] == "yes"
    assert len(hooks.calls("/late")) == 1


async def test_bad_patch_is_an_internal_error(api: client.ApiClient, hooks: HookServer) -> None:
    hooks.handlers["/broken"] = lambda _r: patch([{"op": "remove", "path": "/spec/nothing"}])
    await register(api, "broken", webhook("broken.example.com", hooks, "/broken"), mutating=True)
    code, status = await rejected(create_cm(api, "x"))
    assert code == 500 and status["reason"] == "InternalError"
    assert 'admission webhook "broken.example.com"' in status["message"]


# ---------------------------------------------------------------------------------- matching


async def test_object_and_namespace_selectors(api: client.ApiClient, hooks: HookServer) -> None:
    core = client.CoreV1Api(api)
    on: Any = {"metadata": {"name": "on", "labels": {"webhooks": "enabled"}}}
    off: Any = {"metadata": {"name": "off"}}
    await core.create_namespace(on)
    await core.create_namespace(off)
    await register(
        api,
        "selective",
        webhook(
            "ns.example.com",
            hooks,
            "/ns",
            namespaceSelector={"matchLabels": {"webhooks": "enabled"}},
        ),
        webhook(
            "obj.example.com",
            hooks,
            "/obj",
            operations=("CREATE", "UPDATE"),
            objectSelector={
                "matchExpressions": [{"key": "watch", "operator": "In", "values": ["yes"]}]
            },
        ),
    )
    await create_cm(api, "a", namespace="on")
    await create_cm(api, "b", namespace="off")
    assert [r["namespace"] for r in hooks.calls("/ns")] == ["on"]

    await create_cm(api, "plain")
    await create_cm(api, "watched", labels={"watch": "yes"})
    assert [r["name"] for r in hooks.calls("/obj")] == ["watched"]
    # On update the old object counts too: removing the label is still seen by the webhook.
    await core.patch_namespaced_config_map("watched", "default", {"metadata": {"labels": None}})
    await core.patch_namespaced_config_map("watched", "default", {"data": {"k": "w"}})
    names_ops = [(r["name"], r["operation"]) for r in hooks.calls("/obj")]
    assert names_ops == [("watched", "CREATE"), ("watched", "UPDATE")]
    update = hooks.calls("/obj")[1]
    assert update["oldObject"]["metadata"]["labels"] == {"watch": "yes"}
    assert update["options"]["kind"] == "UpdateOptions"


async def test_match_conditions(api: client.ApiClient, hooks: HookServer) -> None:
    conditions = [
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"},
        {"name": "creates", "expression": "request.operation == 'CREATE' && oldObject == null"},
    ]
    await register(
        api, "cel", webhook("cel.example.com", hooks, "/cel", matchConditions=conditions)
    )
    await create_cm(api, "skip-me")
    await create_cm(api, "call-me")
    assert [r["name"] for r in hooks.calls("/cel")] == ["call-me"]


async def test_webhook_configurations_are_exempt_and_wildcards_match(
    api: client.ApiClient, hooks: HookServer
) -> None:
    everything = webhook("all.example.com", hooks, "/all", url=f"https://127.0.0.1:{free_port()}/")
    everything["rules"] = [
        {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"]}
    ]
    await register(api, "catch-all", everything)
    # Writing another configuration is never sent to a webhook, so the broken one cannot block it.
    await register(api, "another", webhook("other.example.com", hooks, "/other"))
    await client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("another")
    code, status = await rejected(create_cm(api, "blocked"))
    assert code == 500 and 'failed calling webhook "all.example.com"' in status["message"]
    await client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration(
        "catch-all"
    )
    await create_cm(api, "unblocked")


# ---------------------------------------------------------------------------------- failures


async def test_failure_policy_when_the_server_is_down(
    api: client.ApiClient, hooks: HookServer
) -> None:
    port = free_port()
    down = f"https://127.0.0.1:{port}/validate"
    await register(api, "down", webhook("down.example.com", hooks, "", url=down))
    code, status = await rejected(create_cm(api, "x"))
    assert code == 500 and status["reason"] == "InternalError"
    assert status["message"] == (
        'Internal error occurred: failed calling webhook "down.example.com": failed to call '
        f'webhook: Post "{down}?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection '
        "refused"
    )
    await client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("down")
    await register(
        api, "down-ok", webhook("down.example.com", hooks, "", url=down, failure="Ignore")
    )
    await create_cm(api, "y")


async def test_ca_bundle_mismatch(api: client.ApiClient, hooks: HookServer) -> None:
    other_ca, _ = certs.make_ca("someone-else")
    await register(
        api,
        "wrong-ca",
        webhook("strict.example.com", hooks, "/v", ca=other_ca),
        webhook("lenient.example.com", hooks, "/v", ca=other_ca, failure="Ignore"),
    )
    code, status = await rejected(create_cm(api, "x"))
    assert code == 500
    assert 'failed calling webhook "strict.example.com"' in status["message"]
    assert "x509: certificate signed by unknown authority" in status["message"]
    assert "lenient" not in status["message"]
    assert hooks.calls("/v") == []  # the handshake failed: nothing reached the server


async def test_timeout_seconds(api: client.ApiClient, hooks: HookServer) -> None:
    async def slow(_req: dict[str, Any]) -> dict[str, Any]:
        await asyncio.wait_for(hooks.release.wait(), 20)
        return {"allowed": True}

    hooks.handlers["/slow"] = slow
    await register(api, "slow", webhook("slow.example.com", hooks, "/slow", timeoutSeconds=1))
    started = time.monotonic()
    code, status = await rejected(create_cm(api, "x"))
    elapsed = time.monotonic() - started
    assert code == 500
    assert status["message"].endswith(
        f'Post "{hooks.url}/slow?timeout=1s": context deadline exceeded'
    )
    assert 0.9 <= elapsed < 3


async def test_a_burst_of_calls_shares_a_bounded_set_of_connections(
    cluster: SimCluster, hooks: HookServer
) -> None:
    """Calls beyond the kept connections wait for one instead of each dialling (and
    handshaking) its own; all of them are still answered."""

    async def slow(_req: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return {"allowed": True}

    hooks.handlers["/slow"] = slow
    cfg = client.Configuration()
    await config.load_kube_config(config_file=cluster.kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = 100  # the test's client must not be what bounds the burst
    async with client.ApiClient(cfg) as api:
        await register(api, "slow", webhook("slow.example.com", hooks, "/slow"))
        await asyncio.gather(*(create_cm(api, f"cm-{i}") for i in range(60)))
    assert len(hooks.calls("/slow")) == 60
    assert 1 <= len(hooks.peers) <= CONNECTIONS_PER_HOST


async def test_bad_responses_follow_failure_policy(
    api: client.ApiClient, hooks: HookServer
) -> None:
    hooks.handlers["/500"] = lambda _r: web.Response(status=500, text="boom")
    hooks.handlers["/garbage"] = lambda _r: web.Response(status=200, text="not json")
    hooks.handlers["/wrong-uid"] = lambda _r: {"uid": "nope", "allowed": True}
    await register(api, "bad-500", webhook("e500.example.com", hooks, "/500"))
    code, status = await rejected(create_cm(api, "a"))
    assert code == 500 and '("boom")' in status["message"]
    await client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("bad-500")

    await register(api, "garbage", webhook("garbage.example.com", hooks, "/garbage"))
    code, status = await rejected(create_cm(api, "b"))
    assert code == 500 and "json parse error" in status["message"]
    await client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("garbage")

    await register(api, "uid", webhook("uid.example.com", hooks, "/wrong-uid", failure="Ignore"))
    await create_cm(api, "c")  # ignored
    await register(
        api,
        "versions",
        webhook("v2.example.com", hooks, "/v2", admissionReviewVersions=["v2"]),
    )
    code, status = await rejected(create_cm(api, "d"))
    assert "webhook does not accept known AdmissionReview versions" in status["message"]
    assert hooks.calls("/v2") == []


async def test_an_answer_that_is_not_http_fails_the_call(api: client.ApiClient) -> None:
    """Bytes that are no HTTP response are a failure to call the webhook, with the
    parser's reason, and `failurePolicy` decides."""
    ca_cert, ca_key = certs.make_ca("raw-ca")
    cert, key = certs.make_serving_cert(ca_cert, ca_key, ["127.0.0.1"])

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HELLO\r\n\r\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(
        handle, "127.0.0.1", 0, ssl=certs.server_ssl_context(cert, key)
    )
    try:
        url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v"
        hook = webhook("garbage.example.com", HookServer("", 0, ca_cert), "", url=url)
        await register(api, "garbage", hook)
        code, status = await rejected(create_cm(api, "a"))
        assert code == 500
        assert status["message"].startswith(
            'Internal error occurred: failed calling webhook "garbage.example.com": failed to '
            f'call webhook: Post "{url}?timeout=10s": malformed HTTP response: '
        )
        await client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration(
            "garbage"
        )
        await register(api, "ignored", {**hook, "failurePolicy": "Ignore"})
        await create_cm(api, "b")
    finally:
        server.close()
        await server.wait_closed()


# ------------------------------------------------------------------------- services, dry run


async def test_service_client_config(api: client.ApiClient, hooks: HookServer) -> None:
    service: Any = {
        "metadata": {"name": "hooks"},
        "spec": {"ports": [{"port": 443, "targetPort": hooks.port}]},
    }
    await client.CoreV1Api(api).create_namespaced_service("default", service)
    via_service = webhook("svc.example.com", hooks, "/svc")
    via_service["clientConfig"] = {
        "service": {"name": "hooks", "namespace": "default", "path": "/svc"},
        "caBundle": base64.b64encode(hooks.ca_pem).decode(),
    }
    missing = webhook("missing.example.com", hooks, "/none")
    missing["clientConfig"] = {
        "service": {"name": "nohooks", "namespace": "default", "path": "/none"},
        "caBundle": base64.b64encode(hooks.ca_pem).decode(),
    }
    await register(api, "svc", via_service)
    await create_cm(api, "through-service")
    assert [r["name"] for r in hooks.calls("/svc")] == ["through-service"]

    await register(api, "svc-missing", missing)
    code, status = await rejected(create_cm(api, "x"))
    assert code == 500
    assert (
        'Post "https://nohooks.default.svc:443/none?timeout=10s": service "nohooks" not found'
        in status["message"]
    )


async def test_dry_run_and_side_effects(api: client.ApiClient, hooks: HookServer) -> None:
    await register(api, "pure", webhook("pure.example.com", hooks, "/pure"))
    await create_cm(api, "dry", dry_run="All")
    (req,) = hooks.calls("/pure")
    assert req["dryRun"] is True and req["options"]["dryRun"] == ["All"]

    await register(api, "effects", webhook("effects.example.com", hooks, "/fx", sideEffects="Some"))
    code, status = await rejected(create_cm(api, "dry2", dry_run="All"))
    assert code == 400
    assert status["message"] == 'admission webhook "effects.example.com" does not support dry run'
    assert hooks.calls("/fx") == []
    await create_cm(api, "wet")  # not a dry run: called normally
    assert len(hooks.calls("/fx")) == 1


# ---------------------------------------------------------------------------------- binding


async def bind(core: client.CoreV1Api, binding: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST pods/binding: the HTTP code and the Status answered. Read raw: kube-apiserver
    answers a Status, which the client cannot read as the V1Binding it expects
    (kubernetes-client/python issue 547)."""
    name = binding["metadata"]["name"]
    resp = await core.create_namespaced_pod_binding(
        name, "default", binding, _preload_content=False
    )
    try:
        return resp.status, json.loads(await resp.read())
    finally:
        resp.release()


async def test_a_binding_is_admitted_as_a_binding_not_as_a_pod_update(
    api: client.ApiClient, hooks: HookServer
) -> None:
    """kube-apiserver's pods/binding: webhooks for `pods/binding` see a CREATE of the
    Binding; webhooks for `pods` are not called for it, though the pod's nodeName changes."""
    await register(
        api,
        "pods",
        webhook(
            "pods.example.com", hooks, "/pods", resources=("pods",), operations=("CREATE", "UPDATE")
        ),
        webhook("bindings.example.com", hooks, "/bindings", resources=("pods/binding",)),
    )
    core = client.CoreV1Api(api)
    pod: Any = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    created = await core.create_namespaced_pod("default", pod)
    binding: Any = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    assert (await bind(core, binding))[0] == 201
    assert [(r["operation"], r.get("subResource")) for r in hooks.calls("/pods")] == [
        ("CREATE", None)
    ]
    (seen,) = hooks.calls("/bindings")
    assert (seen["operation"], seen["subResource"], seen["name"]) == ("CREATE", "binding", "p")
    assert seen["object"]["kind"] == "Binding"
    assert seen["object"]["target"]["name"] == "node-a"
    assert seen["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    bound = await core.read_namespaced_pod("p", "default")
    assert bound.spec.node_name == "node-a"
    assert bound.metadata.resource_version != created.metadata.resource_version

    code, status = await bind(core, binding)
    assert code == 409 and 'already assigned to node "node-a"' in status["message"]


async def test_a_denied_binding_leaves_the_pod_unbound(
    api: client.ApiClient, hooks: HookServer
) -> None:
    hooks.handlers["/bindings"] = lambda _req: {
        "allowed": False,
        "status": {"code": 403, "message": "not on that node"},
    }
    await register(
        api,
        "bindings",
        webhook("bindings.example.com", hooks, "/bindings", resources=("pods/binding",)),
    )
    core = client.CoreV1Api(api)
    pod: Any = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    created = await core.create_namespaced_pod("default", pod)
    binding: Any = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "uid": created.metadata.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    code, status = await bind(core, binding)
    assert code == 403
    assert status["message"] == (
        'admission webhook "bindings.example.com" denied the request: not on that node'
    )
    assert (await core.read_namespaced_pod("p", "default")).spec.node_name is None
    hooks.handlers["/bindings"] = allow()
    stale = {**binding, "metadata": {"name": "p", "uid": "another-pod"}}
    code, status = await bind(core, stale)
    assert code == 409 and "Precondition failed: UID in precondition" in status["message"]
    assert (await bind(core, binding))[0] == 201
    assert (await core.read_namespaced_pod("p", "default")).spec.node_name == "node-a"


async def test_a_binding_writes_the_node_and_pod_scheduled_in_one_update(
    api: client.ApiClient,
) -> None:
    """kube-apiserver's BindingREST sets spec.nodeName, the Binding's annotations and
    PodScheduled=True (an earlier Unschedulable reason and message cleared) in one write, so
    a watcher sees one MODIFIED event for the binding."""
    core = client.CoreV1Api(api)
    pod: Any = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    created = await core.create_namespaced_pod("default", pod)
    unschedulable: Any = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1 nodes are available.",
                }
            ]
        }
    }
    pending = await core.patch_namespaced_pod_status("p", "default", unschedulable)
    binding: Any = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "annotations": {"example.com/placed-by": "test"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    assert (await bind(core, binding))[0] == 201
    resp = await core.list_namespaced_pod(
        "default",
        field_selector="metadata.name=p",
        watch=True,
        resource_version=pending.metadata.resource_version,
        timeout_seconds=1,
        _preload_content=False,
    )
    try:
        first = json.loads(await resp.content.readline())
    finally:
        resp.release()
    assert first["type"] == "MODIFIED"
    bound = first["object"]
    assert bound["metadata"]["uid"] == created.metadata.uid
    assert bound["spec"]["nodeName"] == "node-a"
    assert bound["metadata"]["annotations"] == {"example.com/placed-by": "test"}
    (cond,) = bound["status"]["conditions"]
    assert cond["lastTransitionTime"]
    assert {k: v for k, v in cond.items() if k != "lastTransitionTime"} == {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
    }


async def test_a_path_that_would_break_the_request_line(
    api: client.ApiClient, hooks: HookServer
) -> None:
    """A Service path with a line break or a space is refused before anything is sent, as
    Go's URL parser refuses it: no header can be smuggled into the request."""
    service: Any = {
        "metadata": {"name": "hooks"},
        "spec": {"ports": [{"port": 443, "targetPort": hooks.port}]},
    }
    await client.CoreV1Api(api).create_namespaced_service("default", service)
    hook = webhook("crlf.example.com", hooks, "")
    hook["clientConfig"] = {
        "service": {"name": "hooks", "namespace": "default", "path": "/v\r\nX-Smuggled: 1"},
        "caBundle": base64.b64encode(hooks.ca_pem).decode(),
    }
    await register(api, "crlf", hook)
    code, status = await rejected(create_cm(api, "x"))
    assert code == 500
    assert status["message"].endswith(": net/url: invalid control character in URL")
    assert hooks.reviews == {}
