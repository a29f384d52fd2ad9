"""The HTTP face of the simulated API server: routing, auth, content types, watch streams.

Authentication: the admin bearer token (a member of `system:masters`, allowed everything),
or a token from a ServiceAccount's TokenRequest (`serviceaccounts/<name>/token`), which
authenticates as `system:serviceaccount:<ns>:<name>` until it expires, as long as that
ServiceAccount (the same object, by uid) exists and the token was issued for the API
server's audiences. Every request is then authorized by RBAC (`rbac.py`) against the Roles,
ClusterRoles and bindings in the store; a denial is kube-apiserver's 403 Forbidden Status.
Other components can ask the same questions through TokenReview and SubjectAccessReview
(`reviews.py`).

It decodes requests, calls `ApiCore`, and encodes the answers the way kube-apiserver
does (objects, lists, `Status` errors, Tables, watch event streams), so that kubectl,
Helm and kubernetes_asyncio talk to it unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import yaml
from aiohttp import web

from kubesim import __version__
from kubesim.apiserver import rbac, reviews
from kubesim.apiserver.core import deletion
from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import ADMIN_USER, Request
from kubesim.apiserver.http import discovery, openapi, podstreams, protobuf, spdystreams, tables
from kubesim.apiserver.http.watchstream import WatchOptions, WatchStream
from kubesim.apiserver.registry.events import event as eventsapi
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.clock import now_rfc3339
from kubesim.machinery.errors import ApiError, bad_request, not_found, unknown_path
from kubesim.machinery.selectors import FieldSelector, LabelSelector, field_selectors_for

JSON = "application/json"
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# (pod, container, previous) -> the log text; None when there is no previous run
LogSource = Callable[[dict[str, Any], str, bool], "str | None"]
LogStream = Callable[[web.Request, dict[str, Any], str], Awaitable[web.StreamResponse | None]]
_USER: web.RequestKey[rbac.UserInfo | None] = web.RequestKey("user", rbac.UserInfo)


@dataclass
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str
    subresource: str
    watch_path: bool  # the legacy /watch/ prefix


# What Go's encoding/json escapes in strings and orjson does not (its HTML-safe default and
# the two JavaScript line terminators); outside strings these bytes never occur in JSON.
_GO_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def go_json(encoded: bytes) -> bytes:
    """A JSON body as kube-apiserver writes it (Go's `json.Encoder.Encode`): the HTML-safe
    escapes, and a newline at the end."""
    for raw, escaped in _GO_ESCAPES:
        if raw in encoded:
            encoded = encoded.replace(raw, escaped)
    return encoded + b"\n"


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=go_json(orjson.dumps(data)), status=status, content_type=JSON, headers=headers
    )


def status_response(err: ApiError) -> web.Response:
    headers = dict(err.headers)
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)
    return json_response(err.to_status(), err.code, headers)


# Status reasons of the HTTP errors aiohttp raises itself (kube-apiserver's StatusReasons).
_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
}


def _bool(q: str | None) -> bool:
    return q is not None and q.lower() in ("true", "1", "")


class Evictor(Protocol):
    """`POST pods/<name>/eviction`: delete the pod if its budgets allow, else raise the
    ApiError kube-apiserver answers with."""

    async def __call__(
        self,
        core: ApiCore,
        pods_rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        req: Request,
    ) -> None: ...


class ApiHttpServer:
    """aiohttp application serving the Kubernetes REST API over an `ApiCore`."""

    def __init__(
        self,
        core: ApiCore,
        token: str | None,
        bookmark_interval: float = 1.0,
    ) -> None:
        self.core = core
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.log_source: LogSource | None = None
        # Real containers (`--run-image`) answer pods/log themselves (previous, follow).
        self.log_stream: LogStream | None = None
        # Real containers (`--run-image`) answer exec, attach and port-forward; without them
        # every pod answers as one whose container the runtime does not know.
        self.pod_streams: podstreams.PodStreams | None = None
        # `pods/<name>/eviction` under the disruption budgets, plugged in by the cluster
        # assembly (the budgets' logic lives with their controller); None: no such subresource.
        self.evict: Evictor | None = None
        # Fault injection, set by the cluster when `--faults` is given:
        # called with (verb, group, resource, namespace); returns None or a decision.
        self.faults: Any = None
        self.requests: dict[tuple[str, str], int] = {}
        # Per client (the user agent's product: "kubectl", "jobset-controller", ...), verb and
        # resource[/subresource]; served read-only at /debug/requests for benchmarks.
        self.requests_by_agent: dict[tuple[str, str, str], int] = {}
        # For the same keys: [first arrival, last arrival (time.monotonic(), the host's
        # CLOCK_MONOTONIC that other processes read too), request body bytes]. Benchmarks
        # time a client's request rate from the server's record rather than by polling.
        self.request_spans: dict[tuple[str, str, str], list[float]] = {}
        # Read-only views of simulated components, served at /debug/<name> (the cluster
        # registers e.g. "scheduler": what kube-scheduler would have evaluated so far).
        self.debug_views: dict[str, Callable[[], dict[str, Any]]] = {}
        self.open_watches = 0
        self.ready = True
        # ServiceAccount tokens issued by TokenRequest.
        self.sa_tokens: dict[str, IssuedToken] = {}

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
            reason = _REASONS.get(exc.status) or exc.reason.replace(" ", "")
            return status_response(ApiError(exc.status, reason, exc.text or exc.reason))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a bug in the simulation: answer like the server would
            import traceback

            traceback.print_exc()
            return status_response(
                ApiError(500, "InternalError", f"Internal error occurred: {exc}")
            )

    def _authenticate(self, request: web.Request) -> rbac.UserInfo | None:
        """The requesting user; None when the server runs without authentication."""
        if self.token is None:
            return None
        header = request.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        who = self.identity(token) if token else None
        if who is None or not set(who.audiences) & set(reviews.API_AUDIENCES):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return who.user

    def identity(self, token: str) -> reviews.Identity | None:
        """Who `token` authenticates as (None: nobody): the admin, or the ServiceAccount of a
        TokenRequest's token that has not expired and whose ServiceAccount still exists."""
        if self.token is not None and token == self.token:
            return reviews.Identity(rbac.UserInfo("admin", (rbac.MASTERS, rbac.AUTHENTICATED)))
        issued = self.sa_tokens.get(token)
        if issued is None:
            return None
        if time.time() >= issued.expires:
            del self.sa_tokens[token]
            return None
        rt = self.core.registry.get("", "v1", "serviceaccounts")
        assert rt is not None
        account = self.core.try_get(rt, issued.namespace, issued.name)
        if account is None or account["metadata"].get("uid") != issued.uid:
            return None
        return reviews.Identity(
            rbac.service_account_user(issued.namespace, issued.name, issued.pod),
            issued.uid,
            issued.audiences,
        )

    def _policy(self) -> rbac.Policy:
        def objects(plural: str) -> list[dict[str, Any]]:
            rt = self.core.registry.get("rbac.authorization.k8s.io", "v1", plural)
            assert rt is not None
            return list(self.core.store.resource(rt.key).objects.values())

        return rbac.Policy.of(
            objects("roles"),
            objects("clusterroles"),
            objects("rolebindings"),
            objects("clusterrolebindings"),
        )

    def _authorize(self, user: rbac.UserInfo | None, attrs: rbac.Attributes) -> None:
        if user is None or rbac.MASTERS in user.groups:
            return
        if not rbac.authorize(self._policy(), attrs):
            raise ApiError(
                403,
                "Forbidden",
                rbac.forbidden_message(attrs),
                group=attrs.api_group,
                kind=attrs.resource,
                name=attrs.name,
            )

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path in ("/healthz", "/livez", "/readyz"):
            if not self.ready and path == "/readyz":
                return web.Response(text="not ready", status=500)
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return json_response(discovery.version_info(__version__))
        user = self._authenticate(request)
        request[_USER] = user
        parts = [p for p in path.split("/") if p]
        is_resource = (parts[:1] == ["api"] and len(parts) >= 3) or (
            parts[:1] == ["apis"] and len(parts) >= 4
        )
        if not is_resource:
            attrs = rbac.Attributes(
                user or rbac.UserInfo(""), request.method.lower(), False, path=path
            )
            self._authorize(user, attrs)
        if path == "/debug/requests" and request.method == "GET":
            return json_response(self._request_counts())
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

    def _request_counts(self) -> dict[str, Any]:
        """Resource requests served so far, by verb and resource, and also by client."""
        return {
            "requests": [
                {"verb": verb, "resource": res, "count": n}
                for (verb, res), n in sorted(self.requests.items())
            ],
            "byUserAgent": [
                {
                    "userAgent": agent,
                    "verb": verb,
                    "resource": res,
                    "count": n,
                    **_span(self.request_spans.get((agent, verb, res))),
                }
                for (agent, verb, res), n in sorted(self.requests_by_agent.items())
            ],
        }

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

    def _parse_target(self, group: str, version: str, rest: list[str]) -> Target:
        watch_path = False
        if rest and rest[0] == "watch":
            watch_path = True
            rest = rest[1:]
        registry = self.core.registry
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and registry.get(group, version, rest[2])
            and not (group == "" and rest[2] in ("status", "finalize"))
        ):
            namespace = rest[1]
            rest = rest[2:]
        if not rest:
            raise unknown_path()
        rt = registry.get(group, version, rest[0])
        if rt is None:
            raise unknown_path()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3 or (sub and sub not in rt.subresources):
            raise unknown_path()
        if rt.namespaced and namespace is None and name:
            raise unknown_path()
        if not rt.namespaced:
            namespace = None
        return Target(rt, namespace, name, sub, watch_path)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            return None
        ctype = request.content_type
        if "protobuf" in ctype:
            try:
                return protobuf.decode_body(raw)
            except protobuf.ProtobufError as exc:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: application/json, application/yaml ({exc})",
                ) from None
        if "cbor" in ctype:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json, application/yaml",
            )
        try:
            if "yaml" in ctype:
                return yaml.load(raw, Loader=_YAML_LOADER)
            return orjson.loads(raw)
        except Exception as exc:
            raise bad_request(f"the body of the request could not be decoded: {exc}") from None

    def _request_options(self, request: web.Request) -> Request:
        q = request.query
        dry = q.getall("dryRun", [])
        who: rbac.UserInfo | None = request.get(_USER)
        # Admission webhooks see the requesting user as `userInfo` (no authentication: admin).
        user: dict[str, Any] = (
            dict(ADMIN_USER) if who is None else {"username": who.name, "groups": list(who.groups)}
        )
        if who is not None and who.extra:
            user["extra"] = {k: list(v) for k, v in who.extra}
        return Request(
            user=user,
            dry_run="All" in dry,
            field_manager=q.get("fieldManager", "") or _user_agent_manager(request),
            field_validation=q.get("fieldValidation", "Ignore"),
            force=_bool(q.get("force")) if "force" in q else False,
            body_bytes=request.content_length or 0,
        )

    # ------------------------------------------------------------- resources

    async def _resource(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        t = self._parse_target(group, version, rest)
        q = request.query
        is_watch = (
            t.watch_path or _bool(q.get("watch")) if ("watch" in q or t.watch_path) else False
        )
        verb = _verb(request.method, t, is_watch)
        user = request.get(_USER)
        if user is not None:
            self._authorize(user, _attributes(user, verb, t, q.get("fieldSelector", "")))
        self._count(request, t, verb)
        decision = await self._inject_faults(request, t, verb)
        req = self._request_options(request)
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

    def _count(self, request: web.Request, t: Target, verb: str) -> None:
        """Count the request by verb and resource, and by client (for /debug/requests)."""
        self.requests[(verb, t.rt.plural)] = self.requests.get((verb, t.rt.plural), 0) + 1
        agent = (request.headers.get("User-Agent") or "").split("/", 1)[0].strip()
        akey = (agent, verb, f"{t.rt.plural}/{t.subresource}" if t.subresource else t.rt.plural)
        self.requests_by_agent[akey] = self.requests_by_agent.get(akey, 0) + 1
        now = time.monotonic()
        size = request.content_length or 0
        span = self.request_spans.get(akey)
        if span is None:
            self.request_spans[akey] = [now, now, float(size)]
        else:
            span[1] = now
            span[2] += size

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
            return await self._log(request, t)
        if t.subresource in podstreams.SUBRESOURCES and t.rt.key == ("", "pods"):
            pod = self.core.get(t.rt, t.namespace or "", t.name)
            spdy_answer = await spdystreams.serve(request, pod, t.subresource, self.pod_streams)
            if spdy_answer is not None:
                return spdy_answer
            return await podstreams.serve(request, pod, t.subresource, self.pod_streams)
        obj = self.core.get(t.rt, t.namespace or "", t.name)
        if t.subresource == "scale":
            return json_response(_scale_of(obj))
        return self._object(request, t.rt, obj)

    async def _create(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        rt, ns = t.rt, t.namespace or ""
        if t.subresource in podstreams.SUBRESOURCES and rt.key == ("", "pods"):
            return await self._get(request, t)  # the SPDY form of the same request
        body = await self._body(request)
        if t.subresource == "binding":
            return json_response(await self._bind(t, body, req), 201)
        if t.subresource == "eviction":
            if self.evict is None:
                raise not_found(rt.group, f"{rt.plural}/eviction", t.name)
            await self.evict(self.core, rt, ns, t.name, body, req)
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                },
                201,
            )
        if t.subresource == "token":
            return json_response(self._issue_token(t, body), 201)
        obj = await self.core.create(rt, ns, body, req)
        return self._object(request, rt, obj, 201, req)

    def _issue_token(self, t: Target, body: Any) -> dict[str, Any]:
        """A TokenRequest for a ServiceAccount: the token is remembered until it expires."""
        # 404 for a ServiceAccount that does not exist
        account = self.core.get(t.rt, t.namespace or "", t.name)
        answer = _token_request(body)
        bound = answer["spec"].get("boundObjectRef") or {}
        pod = None
        if isinstance(bound, dict) and bound.get("kind") == "Pod":
            pod = (str(bound.get("name") or ""), str(bound.get("uid") or ""))
        self.sa_tokens[answer["status"]["token"]] = IssuedToken(
            t.namespace or "",
            t.name,
            str(account["metadata"].get("uid", "")),
            tuple(answer["spec"]["audiences"]),
            time.time() + int(answer["spec"]["expirationSeconds"]),
            pod,
        )
        return answer

    async def _update(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        body = await self._body(request)
        if t.subresource == "scale":
            return json_response(_scale_of(await self._set_scale(t, body, req)))
        obj = await self.core.update(t.rt, t.namespace or "", t.name, body, req, t.subresource)
        return self._object(request, t.rt, obj, 200, req)

    async def _patch(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        body = await self._body(request)
        ctype = request.content_type
        if t.subresource == "scale":  # `kubectl scale` patches the Scale, not the object
            return json_response(_scale_of(await self._patch_scale(t, ctype, body, req)))
        obj = await self.core.patch(
            t.rt, t.namespace or "", t.name, ctype, body, req, t.subresource
        )
        return self._object(request, t.rt, obj, 200, req)

    async def _delete(self, request: web.Request, t: Target, req: Request) -> web.StreamResponse:
        rt, ns = t.rt, t.namespace or ""
        opts = deletion.delete_options(await self._body(request), request.query)
        obj = await self.core.delete(rt, ns, t.name, opts, req)
        still_there = self.core.try_get(rt, ns, t.name) is not None and not req.dry_run
        return self._object(request, rt, obj, 202 if still_there else 200, req)

    async def _delete_collection(
        self, request: web.Request, t: Target, req: Request
    ) -> web.StreamResponse:
        rt = t.rt
        opts = deletion.delete_options(await self._body(request), request.query)
        labels, fields = self._selectors(request, rt)
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
        body = await self._body(request)
        if t.rt.plural == "tokenreviews":
            return reviews.token_review(body, self.identity)
        if t.rt.plural == "selfsubjectreviews":
            return reviews.self_subject_review(body, user)
        if t.rt.plural == "subjectaccessreviews":
            return reviews.subject_access_review(body, self._policy())
        return reviews.self_subject_access_review(body, user, self._policy())

    def _object(
        self,
        request: web.Request,
        rt: ResourceType,
        obj: dict[str, Any],
        status: int = 200,
        req: Request | None = None,
    ) -> web.Response:
        headers = {}
        if req is not None and req.warnings:
            headers["Warning"] = ", ".join(f'299 - "{w}"' for w in req.warnings)
        accept = request.headers.get("Accept", "")
        if tables.wants_table(accept):
            return json_response(
                tables.to_table(rt, [obj], request.query.get("includeObject", "Metadata"), None),
                status,
                headers,
            )
        if tables.wants_metadata(accept):
            return json_response(tables.partial_object_metadata(obj), status, headers)
        if rt.storage is not None:
            obj = eventsapi.to_events_v1(obj)
        elif rt.version != obj.get("apiVersion", "").rpartition("/")[2]:
            obj = {**obj, "apiVersion": rt.group_version}
        return json_response(obj, status, headers)

    def _selectors(
        self, request: web.Request, rt: ResourceType
    ) -> tuple[LabelSelector | None, FieldSelector | None]:
        q = request.query
        labels = LabelSelector.parse(q["labelSelector"]) if q.get("labelSelector") else None
        fields = None
        if q.get("fieldSelector"):
            selectable: tuple[str, ...] = ()
            if rt.crd is not None:
                selectable = tuple(f["jsonPath"] for f in rt.crd.get("selectableFields") or [])
            fields = FieldSelector.parse(
                q["fieldSelector"], field_selectors_for(rt.group, rt.plural, selectable)
            )
        return labels, fields

    def _list(self, request: web.Request, t: Target) -> web.Response:
        q = request.query
        labels, fields = self._selectors(request, t.rt)
        try:
            limit = int(q.get("limit", "0") or 0)
        except ValueError:
            raise bad_request(f"invalid limit: {q.get('limit')}") from None
        result = self.core.list(t.rt, t.namespace, labels, fields, limit, q.get("continue", ""))
        meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
        accept = request.headers.get("Accept", "")
        if tables.wants_table(accept):
            return json_response(
                tables.to_table(t.rt, result.items, q.get("includeObject", "Metadata"), meta)
            )
        if tables.wants_metadata(accept):
            return json_response(tables.partial_object_metadata_list(result.items, meta))
        rt = t.rt
        items = result.items
        if rt.storage is not None:
            items = [eventsapi.to_events_v1(o) for o in items]
        elif any(o.get("apiVersion") != rt.group_version for o in items[:1]):
            items = [{**o, "apiVersion": rt.group_version} for o in items]
        body = (
            b'{"kind":"'
            + rt.kind.encode()
            + b'List","apiVersion":"'
            + rt.group_version.encode()
            + b'","metadata":'
            + orjson.dumps(meta)
            + b',"items":'
            + orjson.dumps(items)
            + b"}"
        )
        return web.Response(body=go_json(body), content_type=JSON)

    async def _log(self, request: web.Request, t: Target) -> web.StreamResponse:
        pod = self.core.get(t.rt, t.namespace or "", t.name)
        container = request.query.get("container") or ""
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("containers") or []]
        inits = [c["name"] for c in spec.get("initContainers") or []]
        if not container:
            if len(names) > 1:
                raise bad_request(
                    f"a container name must be specified for pod {t.name}, choose one of: {names}"
                )
            container = names[0] if names else ""
        elif container not in names and container not in inits:
            raise bad_request(f"container {container} is not valid for pod {t.name}")
        status = pod.get("status") or {}
        if status.get("phase") == "Pending":
            # a container that has run (a sidecar, an init container, one restarting in
            # place) has logs; one that never started has none yet
            known = {
                cs.get("name"): cs
                for cs in [
                    *(status.get("initContainerStatuses") or ()),
                    *(status.get("containerStatuses") or ()),
                ]
            }
            cs = known.get(container) or {}
            waiting = (cs.get("state") or {}).get("waiting")
            if not cs or (waiting is not None and not cs.get("lastState")):
                reason = (waiting or {}).get("reason") or "ContainerCreating"
                raise bad_request(
                    f'container "{container}" in pod "{t.name}" is waiting to start: {reason}'
                )
        if self.log_stream is not None:
            streamed = await self.log_stream(request, pod, container)
            if streamed is not None:
                return streamed
        # strconv.ParseBool, as the API server parses it (clients send "true" or "True")
        previous = request.query.get("previous", "").lower() in ("1", "t", "true")
        text = self.log_source(pod, container, previous) if self.log_source else ""
        if text is None:
            raise bad_request(
                f'previous terminated container "{container}" in pod "{t.name}" not found'
            )
        tail = request.query.get("tailLines")
        if tail is not None:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) > 0 else ""
        return web.Response(text=text, content_type="text/plain")

    async def _bind(self, t: Target, body: Any, req: Request) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        await self.core.bind(t.rt, t.namespace or "", t.name, body, req)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }

    async def _set_scale(self, t: Target, body: Any, req: Request) -> dict[str, Any]:
        obj = self.core.get(t.rt, t.namespace or "", t.name)
        replicas = ((body or {}).get("spec") or {}).get("replicas")
        spec = {**(obj.get("spec") or {}), "replicas": replicas}
        return await self.core.update(t.rt, t.namespace or "", t.name, {**obj, "spec": spec}, req)

    async def _patch_scale(self, t: Target, ctype: str, body: Any, req: Request) -> dict[str, Any]:
        from kubesim.machinery import patch as patching

        scale = _scale_of(self.core.get(t.rt, t.namespace or "", t.name))
        try:
            if ctype.split(";")[0].strip() == "application/json-patch+json":
                patched = patching.apply_json_patch(scale, body if isinstance(body, list) else [])
            else:  # merge and strategic merge patches are the same on a Scale
                patched = patching.apply_merge_patch(scale, body if isinstance(body, dict) else {})
        except patching.PatchError as exc:
            raise ApiError(422, "Invalid", str(exc)) from None
        return await self._set_scale(t, patched, req)

    # ----------------------------------------------------------------- watch

    async def _watch(self, request: web.Request, t: Target, decision: Any) -> web.StreamResponse:
        labels, fields = self._selectors(request, t.rt)
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


def _verb(method: str, t: Target, is_watch: bool) -> str:
    if method == "GET":
        if is_watch:
            return "watch"
        return "get" if t.name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if t.name else "deletecollection"
    raise ApiError(405, "MethodNotAllowed", f"method {method} is not allowed")


def _attributes(user: rbac.UserInfo, verb: str, t: Target, field_selector: str) -> rbac.Attributes:
    """The request's RBAC attributes, as kube-apiserver's RequestInfo resolves them."""
    name, namespace = t.name, t.namespace or ""
    if t.rt.group == "" and t.rt.plural == "namespaces" and name:
        namespace = name  # a namespace's own object is inside that namespace
    if not name and verb in ("list", "watch"):
        # A list/watch limited to one name by field selector is a request for that name.
        for term in field_selector.split(","):
            key, sep, value = term.partition("==") if "==" in term else term.partition("=")
            if sep and key.strip() == "metadata.name" and not key.endswith("!"):
                name = value.strip()
    return rbac.Attributes(
        user, verb, True, t.rt.group, t.rt.plural, t.subresource, name, namespace
    )


def _user_agent_manager(request: web.Request) -> str:
    """Kubernetes names the field manager after the user agent's first word when none is given."""
    agent = request.headers.get("User-Agent", "")
    return agent.split("/")[0] if agent else ""


def _scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector") or {}
    if "matchLabels" in selector or "matchExpressions" in selector:
        selector = selector.get("matchLabels") or {}  # a ReplicationController's is a map
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in selector.items()),
        },
    }


@dataclass(frozen=True)
class IssuedToken:
    """A ServiceAccount token from a TokenRequest: whose, for which audiences, until when."""

    namespace: str
    name: str
    uid: str  # of the ServiceAccount: a new one of the same name does not inherit its tokens
    audiences: tuple[str, ...]
    expires: float  # epoch seconds
    pod: tuple[str, str] | None = None  # spec.boundObjectRef of kind Pod: (name, uid)


def _token_request(body: Any) -> dict[str, Any]:
    import secrets

    spec = dict((body or {}).get("spec") or {})
    spec["audiences"] = list(spec.get("audiences") or reviews.API_AUDIENCES)
    spec["expirationSeconds"] = int(spec.get("expirationSeconds") or 3600)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {
            "token": secrets.token_urlsafe(32),
            "expirationTimestamp": now_rfc3339(time.time() + spec["expirationSeconds"]),
        },
    }


def _span(span: list[float] | None) -> dict[str, float | int]:
    """first/last arrival (monotonic seconds) and body bytes of one /debug/requests row."""
    if span is None:
        return {}
    return {"first": span[0], "last": span[1], "bytes": int(span[2])}
