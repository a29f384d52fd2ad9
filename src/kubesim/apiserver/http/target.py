"""Reading a request: the resource URL it names (`Target`), its verb, its body in any of the
content types kube-apiserver accepts, its selectors and its write options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesim.apiserver import rbac
from kubesim.apiserver.core.request import ADMIN_USER, Request
from kubesim.apiserver.http import protobuf
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import ApiError, bad_request, unknown_path
from kubesim.machinery.selectors import FieldSelector, LabelSelector, field_selectors_for

__all__ = [
    "USER",
    "Target",
    "flag",
    "parse_target",
    "read_body",
    "request_options",
    "selectors",
    "verb_of",
]

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The authenticated user of a request (None: the server runs without authentication).
USER: web.RequestKey[rbac.UserInfo | None] = web.RequestKey("user", rbac.UserInfo)


@dataclass
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str
    subresource: str
    watch_path: bool  # the legacy /watch/ prefix


def flag(q: str | None) -> bool:
    return q is not None and q.lower() in ("true", "1", "")


def parse_target(registry: Registry, group: str, version: str, rest: list[str]) -> Target:
    watch_path = False
    if rest and rest[0] == "watch":
        watch_path = True
        rest = rest[1:]
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


async def read_body(request: web.Request, req: Request | None = None) -> Any:
    """The decoded body; a JSON body's bytes also go to `req.raw_body` (strict decoding
    looks for repeated keys in them)."""
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
        decoded = orjson.loads(raw)
        if req is not None:
            req.raw_body = raw
        return decoded
    except Exception as exc:
        raise bad_request(f"the body of the request could not be decoded: {exc}") from None


def request_options(request: web.Request) -> Request:
    q = request.query
    dry = q.getall("dryRun", [])
    who: rbac.UserInfo | None = request.get(USER)
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
        # kube-apiserver's default for a client that does not say (since 1.27): Warn
        field_validation=q.get("fieldValidation") or "Warn",
        force=flag(q.get("force")) if "force" in q else False,
        body_bytes=request.content_length or 0,
    )


def selectors(
    request: web.Request, rt: ResourceType
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


def verb_of(method: str, t: Target, is_watch: bool) -> str:
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


def _user_agent_manager(request: web.Request) -> str:
    """Kubernetes names the field manager after the user agent's first word when none is given."""
    agent = request.headers.get("User-Agent", "")
    return agent.split("/")[0] if agent else ""
