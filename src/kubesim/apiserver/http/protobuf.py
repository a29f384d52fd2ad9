"""Decoding of Kubernetes protobuf request bodies for the few types typed clients send.

client-go's typed clients (kubectl's `create namespace|configmap|secret|serviceaccount`
generators, `kubectl create role|clusterrole|rolebinding|clusterrolebinding|token`,
`kubectl auth can-i`, Helm's release storage in Secrets, every typed `Delete`) encode request
bodies as `application/vnd.kubernetes.protobuf` and never fall back to JSON. The sim
answers in JSON (clients accept that), but must read these bodies. No maintained Python
package carries the generated Kubernetes protobuf types, so the handful of messages
needed are described here by field number (from k8s.io/api `generated.proto`) and
decoded with a small wire-format reader. Any other type gets 415 UnsupportedMediaType.
"""

from __future__ import annotations

import base64
from typing import Any

from kubesim.clock import now_rfc3339

MAGIC = b"k8s\x00"

# A message description: field number -> (json name, kind, sub-message or None, repeated).
# Kinds: "string", "bytes", "int", "bool", "msg", "map_ss" (map<string,string>),
# "map_sb" (map<string,bytes>), "time".
Field = tuple[str, str, "dict[int, Any] | None", bool]

TYPE_META: dict[int, Field] = {
    1: ("apiVersion", "string", None, False),
    2: ("kind", "string", None, False),
}
UNKNOWN: dict[int, Field] = {
    1: ("typeMeta", "msg", TYPE_META, False),
    2: ("raw", "bytes", None, False),
    3: ("contentEncoding", "string", None, False),
    4: ("contentType", "string", None, False),
}
OWNER_REFERENCE: dict[int, Field] = {
    1: ("kind", "string", None, False),
    3: ("name", "string", None, False),
    4: ("uid", "string", None, False),
    5: ("apiVersion", "string", None, False),
    6: ("controller", "bool", None, False),
    7: ("blockOwnerDeletion", "bool", None, False),
}
OBJECT_META: dict[int, Field] = {
    1: ("name", "string", None, False),
    2: ("generateName", "string", None, False),
    3: ("namespace", "string", None, False),
    5: ("uid", "string", None, False),
    6: ("resourceVersion", "string", None, False),
    7: ("generation", "int", None, False),
    8: ("creationTimestamp", "time", None, False),
    9: ("deletionTimestamp", "time", None, False),
    10: ("deletionGracePeriodSeconds", "int", None, False),
    11: ("labels", "map_ss", None, False),
    12: ("annotations", "map_ss", None, False),
    13: ("ownerReferences", "msg", OWNER_REFERENCE, True),
    14: ("finalizers", "string", None, True),
}
LOCAL_OBJECT_REFERENCE: dict[int, Field] = {1: ("name", "string", None, False)}
OBJECT_REFERENCE: dict[int, Field] = {
    1: ("kind", "string", None, False),
    2: ("namespace", "string", None, False),
    3: ("name", "string", None, False),
}
NAMESPACE_SPEC: dict[int, Field] = {1: ("finalizers", "string", None, True)}
PRECONDITIONS: dict[int, Field] = {
    1: ("uid", "string", None, False),
    2: ("resourceVersion", "string", None, False),
}

# authentication.k8s.io/v1 and authorization.k8s.io/v1: `kubectl create token`,
# `kubectl auth can-i`, and typed clients doing delegated authentication/authorization.
BOUND_OBJECT_REFERENCE: dict[int, Field] = {
    1: ("kind", "string", None, False),
    2: ("apiVersion", "string", None, False),
    3: ("name", "string", None, False),
    4: ("uid", "string", None, False),
}
TOKEN_REQUEST_SPEC: dict[int, Field] = {
    1: ("audiences", "string", None, True),
    3: ("boundObjectRef", "msg", BOUND_OBJECT_REFERENCE, False),
    4: ("expirationSeconds", "int", None, False),
}
TOKEN_REVIEW_SPEC: dict[int, Field] = {
    1: ("token", "string", None, False),
    2: ("audiences", "string", None, True),
}
RESOURCE_ATTRIBUTES: dict[int, Field] = {
    1: ("namespace", "string", None, False),
    2: ("verb", "string", None, False),
    3: ("group", "string", None, False),
    4: ("version", "string", None, False),
    5: ("resource", "string", None, False),
    6: ("subresource", "string", None, False),
    7: ("name", "string", None, False),
}
NON_RESOURCE_ATTRIBUTES: dict[int, Field] = {
    1: ("path", "string", None, False),
    2: ("verb", "string", None, False),
}
SUBJECT_ACCESS_REVIEW_SPEC: dict[int, Field] = {
    1: ("resourceAttributes", "msg", RESOURCE_ATTRIBUTES, False),
    2: ("nonResourceAttributes", "msg", NON_RESOURCE_ATTRIBUTES, False),
    3: ("user", "string", None, False),
    4: ("groups", "string", None, True),
    6: ("uid", "string", None, False),
}
SELF_SUBJECT_ACCESS_REVIEW_SPEC: dict[int, Field] = {
    1: ("resourceAttributes", "msg", RESOURCE_ATTRIBUTES, False),
    2: ("nonResourceAttributes", "msg", NON_RESOURCE_ATTRIBUTES, False),
}

# rbac.authorization.k8s.io/v1: `kubectl create role|clusterrole|rolebinding|clusterrolebinding`.
POLICY_RULE: dict[int, Field] = {
    1: ("verbs", "string", None, True),
    2: ("apiGroups", "string", None, True),
    3: ("resources", "string", None, True),
    4: ("resourceNames", "string", None, True),
    5: ("nonResourceURLs", "string", None, True),
}
SUBJECT: dict[int, Field] = {
    1: ("kind", "string", None, False),
    2: ("apiGroup", "string", None, False),
    3: ("name", "string", None, False),
    4: ("namespace", "string", None, False),
}
ROLE_REF: dict[int, Field] = {
    1: ("apiGroup", "string", None, False),
    2: ("kind", "string", None, False),
    3: ("name", "string", None, False),
}
ROLE: dict[int, Field] = {
    1: ("metadata", "msg", OBJECT_META, False),
    2: ("rules", "msg", POLICY_RULE, True),
}
BINDING: dict[int, Field] = {
    1: ("metadata", "msg", OBJECT_META, False),
    2: ("subjects", "msg", SUBJECT, True),
    3: ("roleRef", "msg", ROLE_REF, False),
}

TYPES: dict[str, dict[int, Field]] = {
    "Namespace": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("spec", "msg", NAMESPACE_SPEC, False),
    },
    "ConfigMap": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("data", "map_ss", None, False),
        3: ("binaryData", "map_sb", None, False),
        4: ("immutable", "bool", None, False),
    },
    "Secret": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("data", "map_sb", None, False),
        3: ("type", "string", None, False),
        4: ("stringData", "map_ss", None, False),
        5: ("immutable", "bool", None, False),
    },
    "ServiceAccount": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("secrets", "msg", OBJECT_REFERENCE, True),
        3: ("imagePullSecrets", "msg", LOCAL_OBJECT_REFERENCE, True),
        4: ("automountServiceAccountToken", "bool", None, False),
    },
    "Role": ROLE,
    "ClusterRole": ROLE,
    "RoleBinding": BINDING,
    "ClusterRoleBinding": BINDING,
    "TokenRequest": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("spec", "msg", TOKEN_REQUEST_SPEC, False),
    },
    "TokenReview": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("spec", "msg", TOKEN_REVIEW_SPEC, False),
    },
    "SelfSubjectReview": {1: ("metadata", "msg", OBJECT_META, False)},
    "SubjectAccessReview": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("spec", "msg", SUBJECT_ACCESS_REVIEW_SPEC, False),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "msg", OBJECT_META, False),
        2: ("spec", "msg", SELF_SUBJECT_ACCESS_REVIEW_SPEC, False),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int", None, False),
        2: ("preconditions", "msg", PRECONDITIONS, False),
        3: ("orphanDependents", "bool", None, False),
        4: ("propagationPolicy", "string", None, False),
        5: ("dryRun", "string", None, True),
    },
}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf message of a type this module knows."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) triples; length-delimited values stay bytes."""
    out = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _time(buf: bytes) -> str:
    seconds = 0
    for number, _, value in _fields(buf):
        if number == 1:
            seconds = _signed(value)
    if seconds == 0:
        return ""
    return now_rfc3339(float(seconds))


def _map_entry(buf: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, _, v in _fields(buf):
        if number == 1:
            key = v.decode()
        elif number == 2:
            value = v
    return key, value


def decode_message(buf: bytes, desc: dict[int, Field]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, _, value in _fields(buf):
        spec = desc.get(number)
        if spec is None:
            continue  # fields the sim does not need are skipped, as proto3 readers do
        name, kind, sub, repeated = spec
        decoded: Any
        if kind == "string":
            decoded = bytes(value).decode()
        elif kind == "bytes":
            decoded = bytes(value)
        elif kind == "int":
            decoded = _signed(value)
        elif kind == "bool":
            decoded = bool(value)
        elif kind == "time":
            decoded = _time(value)
        elif kind == "msg":
            assert sub is not None
            decoded = decode_message(value, sub)
        elif kind in ("map_ss", "map_sb"):
            k, v = _map_entry(value)
            target = out.setdefault(name, {})
            target[k] = v.decode() if kind == "map_ss" else base64.b64encode(v).decode()
            continue
        else:  # pragma: no cover - the tables above only use the kinds handled here
            raise ProtobufError(f"unknown field kind {kind}")
        if repeated:
            out.setdefault(name, []).append(decoded)
        elif decoded in ("", 0, False) and kind != "msg":
            continue  # Go writes zero values; JSON (omitempty) leaves them out
        else:
            out[name] = decoded
    return out


def decode_body(body: bytes) -> dict[str, Any]:
    """A protobuf request body → the JSON-shaped object it encodes."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the Kubernetes protobuf envelope")
    envelope = decode_message(body[len(MAGIC) :], UNKNOWN)
    type_meta = envelope.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    desc = TYPES.get(kind)
    if desc is None:
        raise ProtobufError(f"protobuf bodies of kind {kind or '<none>'} are not supported")
    obj = decode_message(envelope.get("raw", b""), desc)
    if kind != "DeleteOptions" or type_meta.get("apiVersion"):
        obj = {"apiVersion": type_meta.get("apiVersion", "v1"), "kind": kind, **obj}
    return obj
