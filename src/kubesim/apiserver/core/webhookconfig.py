"""Admission webhook configurations, parsed, and which requests their rules match.

`parse_configuration` turns a stored `MutatingWebhookConfiguration` or
`ValidatingWebhookConfiguration` into `Webhook`s with the v1 defaults applied, selectors
parsed and matchConditions compiled (a condition that does not compile fails at evaluation,
so the failurePolicy applies, as the simulated server does not validate configurations).
`rule_matches` is upstream's rules.Matcher. `admission.py` calls the webhooks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesim.apiserver.core.request import AdmissionAttributes
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.cel import CelProgram, compile_expression
from kubesim.machinery.errors import ApiError
from kubesim.machinery.selectors import LabelSelector

__all__ = [
    "MatchCondition",
    "Webhook",
    "is_namespace",
    "parse_configuration",
    "request_namespace",
    "rule_matches",
]

_CEL_VARIABLES = ("object", "oldObject", "request")
_DEFAULT_TIMEOUT = 10


@dataclass(frozen=True)
class MatchCondition:
    """A compiled matchCondition; `error` is set instead when its expression does not compile,
    which makes every evaluation fail (and the failurePolicy apply) rather than the write of
    the configuration, since the simulated server does not validate configurations."""

    name: str
    program: CelProgram | None
    error: str = ""


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration, with its defaults applied and selectors parsed."""

    name: str
    configuration: str
    index: int
    mutating: bool
    rules: tuple[dict[str, Any], ...]
    namespace_selector: LabelSelector | ApiError
    object_selector: LabelSelector | ApiError
    match_conditions: tuple[MatchCondition, ...]
    match_policy: str
    failure_policy: str
    side_effects: str
    timeout: float
    review_versions: tuple[str, ...]
    reinvoke: bool
    client_config: dict[str, Any]


def _selector(raw: Any) -> LabelSelector | ApiError:
    """Parse a webhook's selector; absent or `{}` selects everything, as its default does."""
    if not raw:
        return LabelSelector.everything()
    try:
        return LabelSelector.from_label_selector(raw)
    except ApiError as err:
        return ApiError(500, "InternalError", f"Internal error occurred: {err.message}")


def _conditions(raw: Any) -> tuple[MatchCondition, ...]:
    out: list[MatchCondition] = []
    for cond in raw if isinstance(raw, list) else ():
        if not isinstance(cond, dict):
            continue
        name = str(cond.get("name", ""))
        try:
            program = compile_expression(str(cond.get("expression", "")), _CEL_VARIABLES)
        except ValueError as exc:
            out.append(MatchCondition(name, None, str(exc)))
        else:
            out.append(MatchCondition(name, program))
    return tuple(out)


def parse_configuration(config: dict[str, Any], mutating: bool) -> list[Webhook]:
    """The webhooks of one stored configuration object, defaults applied (v1 defaults)."""
    name = str(config["metadata"]["name"])
    hooks: list[Webhook] = []
    for index, raw in enumerate(config.get("webhooks") or ()):
        if not isinstance(raw, dict):
            continue
        try:
            timeout = float(raw.get("timeoutSeconds") or _DEFAULT_TIMEOUT)
        except (TypeError, ValueError):
            timeout = float(_DEFAULT_TIMEOUT)
        rules = tuple(r for r in raw.get("rules") or () if isinstance(r, dict))
        versions = raw.get("admissionReviewVersions") or ()
        hooks.append(
            Webhook(
                name=str(raw.get("name", "")),
                configuration=name,
                index=index,
                mutating=mutating,
                rules=rules,
                namespace_selector=_selector(raw.get("namespaceSelector")),
                object_selector=_selector(raw.get("objectSelector")),
                match_conditions=_conditions(raw.get("matchConditions")),
                match_policy=str(raw.get("matchPolicy") or "Equivalent"),
                failure_policy=str(raw.get("failurePolicy") or "Fail"),
                side_effects=str(raw.get("sideEffects") or ""),
                timeout=timeout if timeout > 0 else float(_DEFAULT_TIMEOUT),
                review_versions=tuple(str(v) for v in versions if isinstance(v, str)),
                reinvoke=raw.get("reinvocationPolicy") == "IfNeeded",
                client_config=dict(raw.get("clientConfig") or {}),
            )
        )
    return hooks


def is_namespace(rt: ResourceType) -> bool:
    return rt.group == "" and rt.plural == "namespaces"


def request_namespace(attrs: AdmissionAttributes) -> str:
    """The namespace kube-apiserver puts in admission attributes.

    For a Namespace object addressed by name (update, delete) that is its own name, a quirk of
    kube-apiserver's request parsing that webhooks and scope matching can observe.
    """
    if is_namespace(attrs.rt) and attrs.operation != "CREATE":
        return attrs.name
    return attrs.namespace


def rule_matches(
    rule: dict[str, Any], attrs: AdmissionAttributes, rt: ResourceType, namespace: str
) -> bool:
    """Upstream's rules.Matcher: every list must allow the request, `*` allowing anything."""
    operations = rule.get("operations") or ()
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and rt.group not in groups:
        return False
    versions = rule.get("apiVersions") or ()
    if "*" not in versions and rt.version not in versions:
        return False
    for entry in rule.get("resources") or ():
        res, _, sub = str(entry).partition("/")
        if (res in ("*", rt.plural)) and (sub in ("*", attrs.subresource)):
            break
    else:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        return not is_namespace(rt) and namespace != ""
    if scope == "Cluster":
        return is_namespace(rt) or namespace == ""
    return True
