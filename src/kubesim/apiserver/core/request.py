"""Who asks and how: the request a write is carried out for, what admission is told about
it, and the interfaces of the admission chain and of per-type object hooks.

Shared by `ApiCore`, the HTTP server and the registry modules, below all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import Cause

__all__ = [
    "ADMIN_USER",
    "SYSTEM_USER",
    "Admission",
    "AdmissionAttributes",
    "ObjectHooks",
    "Request",
    "component_request",
]

SYSTEM_USER = {"username": "system:serviceaccount:kube-system:sim", "groups": ["system:masters"]}
ADMIN_USER = {"username": "admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass
class Request:
    """Who asks, and the options of a write that change how it is carried out."""

    user: dict[str, Any] = field(default_factory=lambda: dict(ADMIN_USER))
    dry_run: bool = False
    field_manager: str = ""
    # Ignore | Warn | Strict (fieldvalidation.py); the simulator's own writes ignore
    field_validation: str = "Ignore"
    force: bool = False
    warnings: list[str] = field(default_factory=list)
    body_bytes: int = 0  # the request body's size, which decides OFF_LOOP_BYTES
    # The JSON body as received (repeated keys are lost once decoded); empty for others
    raw_body: bytes = b""
    # A simulated component's own write: its body is built by the simulator from stored
    # objects and fields it knows, so decoding has no unknown field to drop
    own: bool = False


def component_request(field_manager: str) -> Request:
    """A simulated component's own write, as the component `field_manager`."""
    return Request(user=dict(SYSTEM_USER), field_manager=field_manager, own=True)


@dataclass(frozen=True)
class AdmissionAttributes:
    """What an admission webhook is told about a request (AdmissionRequest fields)."""

    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    request: Request
    options: dict[str, Any] | None = None


class Admission(Protocol):
    """The admission chain: mutating webhooks, then validating ones."""

    async def mutate(
        self, attrs: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]: ...

    async def validate(
        self, attrs: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None: ...


class ObjectHooks(Protocol):
    """Per-type extra semantics plugged in by other modules (e.g. CRD registration)."""

    def before_write(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, req: Request
    ) -> dict[str, Any]: ...

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]: ...

    def after_write(
        self, rt: ResourceType, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None: ...
