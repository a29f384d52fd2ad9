"""Answers as kube-apiserver writes them: JSON bytes as Go encodes them, `Status` errors,
objects and lists in the version asked for, Tables and metadata-only views."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from kubesim.apiserver.core.request import Request
from kubesim.apiserver.http import tables
from kubesim.apiserver.registry.events import event as eventsapi
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import ApiError

__all__ = [
    "JSON",
    "REASONS",
    "go_json",
    "json_response",
    "list_response",
    "object_response",
    "status_response",
    "success_status",
]

JSON = "application/json"


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
REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
}


def success_status() -> dict[str, Any]:
    """The `Status` kube-apiserver answers a binding or an eviction with."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def quote_ascii(text: str) -> str:
    """Go's strconv.QuoteToASCII: a header value must be ASCII, and kubectl unquotes it."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def object_response(
    request: web.Request,
    rt: ResourceType,
    obj: dict[str, Any],
    status: int = 200,
    req: Request | None = None,
) -> web.Response:
    headers = {}
    if req is not None and req.warnings:
        # quoted: a warning may itself hold quotes (`unknown field "x"`) and any character
        headers["Warning"] = ", ".join(f"299 - {quote_ascii(w)}" for w in req.warnings)
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


def list_response(
    request: web.Request, rt: ResourceType, items: list[dict[str, Any]], meta: dict[str, Any]
) -> web.Response:
    """A list in the version asked for, or as a Table or metadata when the client asks so."""
    q = request.query
    accept = request.headers.get("Accept", "")
    if tables.wants_table(accept):
        return json_response(tables.to_table(rt, items, q.get("includeObject", "Metadata"), meta))
    if tables.wants_metadata(accept):
        return json_response(tables.partial_object_metadata_list(items, meta))
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
