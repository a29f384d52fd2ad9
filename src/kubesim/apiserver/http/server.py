"""The HTTP face of the simulated API server: routing, discovery, OpenAPI, the verbs on
resources and their subresources, watch streams.

It decodes requests (`target.py`), authenticates and authorizes them (`auth.py`), calls
`ApiCore`, and encodes the answers the way kube-apiserver does (`responses.py`: objects,
lists, `Status` errors, Tables; `watchstream.py`: watch event streams), so that kubectl, Helm
and kubernetes_asyncio talk to it unchanged. Pod logs, exec, attach, port-forward and
eviction are the nodes' to answer (`pods.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import orjson
from aiohttp import web

from kubesim import __version__
from kubesim.apiserver import rbac, reviews
from kubesim.apiserver.core import deletion
from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.http import discovery, openapi, podstreams, spdystreams, subresources
from kubesim.apiserver.http.auth import Authenticator, IssuedToken, attributes
from kubesim.apiserver.http.pods import NodeServices, serve_log
from kubesim.apiserver.http.responses import (
    JSON,
    REASONS,
    json_response,
    list_response,
    object_response,
    status_response,
    success_status,
)
from kubesim.apiserver.http.stats import RequestStats
from kubesim.apiserver.http.target import (
    USER,
    Target,
    flag,
    parse_target,
    read_body,
    request_options,
    selectors,
    verb_of,
)
from kubesim.apiserver.http.watchstream import WatchOptions, WatchStream
from kubesim.apiserver.registry.events import event as eventsapi
from kubesim.machinery.errors import ApiError, bad_request, not_found, unknown_path

__all__ = ["ApiHttpServer", "FaultInjector"]


class FaultInjector(Protocol):
    """Decides, per request, which fault to inject (`faults.py`'s `FaultPlan`)."""

    def decide(self, verb: str, group: str, resource: str, namespace: str, now: float) -> Any: ...

    def record(self, what: str) -> None: ...


class ApiHttpServer:
    """aiohttp application serving the Kubernetes REST API over an `ApiCore`."""

    def __init__(
        self,
        core: ApiCore,
        token: str | None,
        bookmark_interval: float = 1.0,
        *,
        nodes: NodeServices | None = None,
        faults: FaultInjector | None = None,
        sa_tokens: dict[str, IssuedToken] | None = None,
        debug_views: Mapping[str, Callable[[], dict[str, Any]]] | None = None,
    ) -> None:
        self.core = core
        self.bookmark_interval = bookmark_interval
        self.nodes = nodes or NodeServices()
        # Fault injection (`--faults`): asked about every resource request; None: no faults.
        self.faults = faults
        # ServiceAccount tokens issued by TokenRequest (and by the runtime of real pods).
        self.auth = Authenticator(core, token, {} if sa_tokens is None else sa_tokens)
        self.stats = RequestStats()
        # Read-only views of simulated components, served at /debug/<name> (e.g. "scheduler":
        # what kube-scheduler would have evaluated so far).
        self.debug_views: dict[str, Callable[[], dict[str, Any]]] = dict(debug_views or {})
        # (method, path) -> handler, served to the admin (system:masters) alone: what only
        # the node's owner does on a cluster (`POST /sim/images`, kubesim.images.endpoint).
        self.admin_routes: dict[
            tuple[str, str], Callable[[web.Request], Awaitable[web.StreamResponse]]
        ] = {}
        self.open_watches = 0
        self.ready = True

    @property
    def requests(self) -> dict[tuple[str, str], int]:
        """Resource requests served so far, by (verb, resource)."""
        return self.stats.requests

    def identity(self, token: str) -> reviews.Identity | None:
        return self.auth.identity(token)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._middleware])
        # [\s\S]: a path may hold any character once decoded, a newline (%0A) too.
        app.router.add_route("*", "/{tail:[\\s\\S]*}", self._dispatch)
        return app

    # ------------------------------------------------------------- plumbing
    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as err:
            return status_response(err)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            # aiohttp's own refusals (a body over client_max_size, ...) as a Status too
            reason = REASONS.get(exc.status) or exc.reason.replace(" ", "")
            return status_response(ApiError(exc.status, reason, exc.text or exc.reason))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a bug in the simulation: answer like the server would
            import traceback

            traceback.print_exc()
            return status_response(
                ApiError(500, "InternalError", f"Internal error occurred: {exc}")
            )

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path in ("/healthz", "/livez", "/readyz"):
            if not self.ready and path == "/readyz":
                return web.Response(text="not ready", status=500)
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return json_response(discovery.version_info(__version__))
        user = self.auth.authenticate(request)
        request[USER] = user
        parts = [p for p in path.split("/") if p]
        is_resource = (parts[:1] == ["api"] and len(parts) >= 3) or (
            parts[:1] == ["apis"] and len(parts) >= 4
        )
        if not is_resource:
            attrs = rbac.Attributes(
                user or rbac.UserInfo(""), request.method.lower(), False, path=path
            )
            self.auth.authorize(user, attrs)
        admin_route = self.admin_routes.get((request.method, path))
        if admin_route is not None:
            if user is not None and rbac.MASTERS not in user.groups:
                raise ApiError(403, "Forbidden", rbac.forbidden_message(attrs))
            return await admin_route(request)
        if path == "/debug/requests" and request.method == "GET":
            return json_response(self.stats.report())
        if len(parts) == 2 and parts[0] == "debug" and request.method == "GET":
            view = self.debug_views.get(parts[1])
            if view is not None:
                return json_response(view())
        if not parts:
            return json_response(
                {"paths": ["/api", "/apis", "/healthz", "/openapi/v2", "/openapi/v3", "/version"]}
            )
        if parts[0] == "openapi":
            return await self._openapi(request, parts)
        if parts[0] == "api":
            if len(parts) == 1:
                return json_response(discovery.api_versions())
            if len(parts) == 2:
                if parts[1] != "v1":
                    raise unknown_path()
                return json_response(discovery.resource_list(self.core.registry, "", "v1"))
            return await self._resource(request, "", parts[1], parts[2:])
        if parts[0] == "apis":
            if len(parts) == 1:
                return json_response(discovery.group_list(self.core.registry))
            if len(parts) == 2:
                group = discovery.group(self.core.registry, parts[1])
                if group is None:
                    raise unknown_path()
                return json_response(group)
            if len(parts) == 3:
                if not self.core.registry.in_group_version(parts[1], parts[2]):
                    raise unknown_path()
                return json_response(
                    discovery.resource_list(self.core.registry, parts[1], parts[2])
                )
            return await self._resource(request, parts[1], parts[2], parts[3:])
        raise unknown_path()

    async def _openapi(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        if parts[1:] == ["v2"]:
            if "protobuf" in request.headers.get("Accept", ""):
                return web.Response(body=openapi.v2_protobuf(), content_type=openapi.V2_PROTOBUF)
            return json_response(openapi.v2_document(self.core.registry))
        if parts[1:] == ["v3"]:
            return json_response(openapi.v3_index(self.core.registry))
        if len(parts) >= 3 and parts[1] == "v3":
            doc = openapi.v3_document(self.core.registry, "/".join(parts[2:]))
            if doc is None:
                raise unknown_path()
            return json_response(doc)
        raise unknown_path()

    async def _resource(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        t = parse_target(self.core.registry, group, version, rest)
        q = request.query
        is_watch = t.watch_path or flag(q.get("watch")) if ("watch" in q or t.watch_path) else False
        verb = verb_of(request.method, t, is_watch)
        user = request.get(USER)
        if user is not None:
            self.auth.authorize(user, attributes(user, verb, t, q.get("fieldSelector", "")))
        self.stats.count(request, t, verb)
        decision = await self._inject_faults(request, t, verb)
        req = request_options(request)
        if t.rt.group in (reviews.AUTHN_GROUP, reviews.AUTHZ_GROUP) and (
            t.rt.plural in reviews.REVIEW_RESOURCES
        ):
            return json_response(await self._review(request, t, verb, user), 201)
        if verb == "watch":
            return await self._watch(request, t, decision)
        if verb == "list":
            return self._list(request, t)
        if verb == "get":
            return await self._get(request, t)
        if verb == "create":
            return await self._create(request, t, req)
        if verb == "update":
            return await self._update(request, t, req)
        if verb == "patch":
            return await self._patch(request, t, req)
        if verb == "delete":
            return await self._delete(request, t, req)
        if verb == "deletecollection":
            return await self._delete_collection(request, t, req)
        raise ApiError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    async def _inject_faults(self, request: web.Request, t: Target, verb: str) -> Any:
        """Apply the fault injector's decision for this request (delay, reset, error); the
        decision is returned for a watch to apply its own faults (cut, gone)."""
        if self.faults is None:
            return None
        decision = self.faults.decide(
            verb, t.rt.group, t.rt.plural, t.namespace or "", time.monotonic()
        )
        if decision.delay:
            await asyncio.sleep(decision.delay)
        if decision.reset_connection and request.transport is not None:
            request.transport.close()
            raise ConnectionResetError("fault injection: connection reset")
        if decision.error is not None:
            raise decision.error
        return decision

    async def _get(self, request: web.Request, t: Target) -> web.StreamResponse:
        if t.subresource == "log":
            return await serve_log(self.core, self.nodes, request, t)
        if t.subresource in podstreams.SUBRESOURCES and t.rt.key == ("", "pods"):
            pod = self.core.get(t.rt, t.namespace or "", t.name)
            spdy_answer = await spdystreams.serve(
                request, pod, t.subresource, self.nodes.pod_streams
            )
            if spdy_answer is not None:
                return spdy_answer
            return await podstreams.serve(request, pod, t.subresource, self.nodes.pod_streams)
        obj = self.core.get(t.rt, t.namespace or "", t.name)
        if t.subresource == "scale":
            return json_response(subresources.scale_of(obj))
        return object_response(request, t.rt, obj)

    async def _create(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        rt, ns = t.rt, t.namespace or ""
        if t.subresource in podstreams.SUBRESOURCES and rt.key == ("", "pods"):
            return await self._get(request, t)  # the SPDY form of the same request
        body = await read_body(request, req)
        if t.subresource == "binding":
            return json_response(await subresources.bind(self.core, t, body, req), 201)
        if t.subresource == "eviction":
            if self.nodes.evict is None:
                raise not_found(rt.group, f"{rt.plural}/eviction", t.name)
            await self.nodes.evict(self.core, rt, ns, t.name, body, req)
            return json_response(success_status(), 201)
        if t.subresource == "token":
            return json_response(self.auth.issue_token(rt, ns, t.name, body), 201)
        obj = await self.core.create(rt, ns, body, req)
        return object_response(request, rt, obj, 201, req)

    async def _update(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        body = await read_body(request, req)
        if t.subresource == "scale":
            return json_response(
                subresources.scale_of(await subresources.set_scale(self.core, t, body, req))
            )
        obj = await self.core.update(t.rt, t.namespace or "", t.name, body, req, t.subresource)
        return object_response(request, t.rt, obj, 200, req)

    async def _patch(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        body = await read_body(request, req)
        ctype = request.content_type
        if t.subresource == "scale":  # `kubectl scale` patches the Scale, not the object
            return json_response(
                subresources.scale_of(
                    await subresources.patch_scale(self.core, t, ctype, body, req)
                )
            )
        obj = await self.core.patch(
            t.rt, t.namespace or "", t.name, ctype, body, req, t.subresource
        )
        return object_response(request, t.rt, obj, 200, req)

    async def _delete(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        rt, ns = t.rt, t.namespace or ""
        opts = deletion.delete_options(await read_body(request), request.query)
        obj = await self.core.delete(rt, ns, t.name, opts, req)
        still_there = self.core.try_get(rt, ns, t.name) is not None and not req.dry_run
        return object_response(request, rt, obj, 202 if still_there else 200, req)

    async def _delete_collection(
        self, request: web.Request, t: Target, req: Request
    ) -> web.StreamResponse:
        rt = t.rt
        opts = deletion.delete_options(await read_body(request), request.query)
        labels, fields = selectors(request, rt)
        items = await self.core.delete_collection(rt, t.namespace, labels, fields, opts, req)
        if rt.storage is not None:
            items = [eventsapi.to_events_v1(o) for o in items]
        return json_response(
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.group_version,
                "metadata": {"resourceVersion": str(self.core.store.rv)},
                "items": items,
            }
        )

    async def _review(
        self, request: web.Request, t: Target, verb: str, user: rbac.UserInfo | None
    ) -> dict[str, Any]:
        """A review (TokenReview, SubjectAccessReview, ... see reviews.py): answered, not
        stored."""
        if verb != "create" or t.name or t.subresource:
            raise reviews.method_not_allowed()
        body = await read_body(request)
        if t.rt.plural == "tokenreviews":
            return reviews.token_review(body, self.auth.identity)
        if t.rt.plural == "selfsubjectreviews":
            return reviews.self_subject_review(body, user)
        if t.rt.plural == "subjectaccessreviews":
            return reviews.subject_access_review(body, self.auth.policy())
        return reviews.self_subject_access_review(body, user, self.auth.policy())

    def _list(self, request: web.Request, t: Target) -> web.Response:
        q = request.query
        labels, fields = selectors(request, t.rt)
        try:
            limit = int(q.get("limit", "0") or 0)
        except ValueError:
            raise bad_request(f"invalid limit: {q.get('limit')}") from None
        result = self.core.list(t.rt, t.namespace, labels, fields, limit, q.get("continue", ""))
        meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
        return list_response(request, t.rt, result.items, meta)

    async def _watch(self, request: web.Request, t: Target, decision: Any) -> web.StreamResponse:
        labels, fields = selectors(request, t.rt)
        opts = WatchOptions.of(request)
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": JSON, "Transfer-Encoding": "chunked"}
        )
        await resp.prepare(request)
        try:
            if decision is not None and getattr(decision, "gone", False):
                raise ApiError(
                    410,
                    "Expired",
                    f"too old resource version: {opts.resource_version} "
                    "(forced by fault injection)",
                )
            watcher, initial = self.core.watch(
                t.rt, t.namespace, labels, fields, opts.resource_version
            )
        except ApiError as err:
            await resp.write(orjson.dumps({"type": "ERROR", "object": err.to_status()}) + b"\n")
            return resp
        stream = WatchStream(
            resp,
            t.rt,
            t.namespace,
            opts,
            lambda: self.core.store.rv,
            self.faults,
            decision.watch_cut_after if decision is not None else None,
            self.bookmark_interval,
        )
        self.open_watches += 1
        try:
            await stream.run(watcher, initial)
        finally:
            self.open_watches -= 1
            self.core.unwatch(t.rt, watcher)
        return resp
