"""ValidatingAdmissionPolicy for the simulated API server: CEL checks that run in the server.

kube-apiserver's `ValidatingAdmissionPolicy` plugin runs before the validating webhooks. A
policy (`admissionregistration.k8s.io/v1` `ValidatingAdmissionPolicy`) takes effect through
each `ValidatingAdmissionPolicyBinding` naming it; what is modelled:

- matching: the policy's `matchConstraints.resourceRules` (operations, apiGroups,
  apiVersions, resources, scope, as webhook rules), then its `matchConditions` (CEL, all true);
  a binding's own `matchResources` narrows with `resourceRules` too;
- evaluation: `variables` in order (each sees `variables.<earlier>`), then every
  `validations[].expression` with `object`, `oldObject`, `request` (the AdmissionRequest a
  webhook would get), `variables` and `params` (always null: no paramKind);
- outcome per binding `validationActions`: `Deny` refuses with kube-apiserver's status
  (`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding
  '<binding>' denied request: <message>`, 422 Invalid unless the validation names a
  reason), `Warn` adds a warning, `Audit` is ignored; an expression that cannot be
  compiled or evaluated obeys `failurePolicy` (`Fail`, the default, denies).

Not modelled: `paramKind`/`paramRef`, `namespaceSelector`/`objectSelector` and
`excludeResourceRules`, `messageExpression`, `auditAnnotations`, the `authorizer` and
`namespaceObject` variables, type checking of the policy at write time (the server does not
validate policies), and cost limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import celpy.celtypes as celtypes

from kubesim.apiserver.core.request import AdmissionAttributes
from kubesim.apiserver.core.store import ResourceKey
from kubesim.apiserver.core.webhookconfig import request_namespace, rule_matches
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.cel import (
    PER_CALL_LIMIT,
    RUNTIME_COST_BUDGET,
    CelError,
    CelProgram,
    CostTracker,
    LazyVariables,
    compile_expression,
)
from kubesim.machinery.errors import ApiError, Cause

__all__ = ["BINDINGS", "POLICIES", "Policy", "PolicyAdmission", "parse_policy"]

GROUP = "admissionregistration.k8s.io"
POLICIES: ResourceKey = (GROUP, "validatingadmissionpolicies")
BINDINGS: ResourceKey = (GROUP, "validatingadmissionpolicybindings")
_VARIABLES = ("object", "oldObject", "request", "variables", "params")
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}


@dataclass(frozen=True)
class _Expr:
    """A compiled expression, or why it did not compile (fails at evaluation)."""

    name: str
    program: CelProgram | None
    error: str
    message: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Policy:
    name: str
    failure_policy: str
    rules: tuple[dict[str, Any], ...]
    conditions: tuple[_Expr, ...]
    variables: tuple[_Expr, ...]
    validations: tuple[_Expr, ...]


def _compile(name: str, source: Any, message: str = "", reason: str = "") -> _Expr:
    try:
        program = compile_expression(str(source or ""), _VARIABLES)
    except ValueError as exc:
        return _Expr(name, None, str(exc), message, reason)
    return _Expr(name, program, "", message, reason)


def _dicts(raw: Any) -> list[dict[str, Any]]:
    return [x for x in raw if isinstance(x, dict)] if isinstance(raw, list) else []


def parse_policy(obj: dict[str, Any]) -> Policy:
    spec = obj.get("spec") or {}
    constraints = spec.get("matchConstraints") or {}
    validations = []
    for i, v in enumerate(_dicts(spec.get("validations"))):
        expression = str(v.get("expression") or "")
        # kube-apiserver's default message names the failed expression.
        message = str(v.get("message") or f"failed expression: {expression.strip()}")
        validations.append(
            _compile(f"validations[{i}]", expression, message, str(v.get("reason") or ""))
        )
    return Policy(
        name=str(obj["metadata"]["name"]),
        failure_policy=str(spec.get("failurePolicy") or "Fail"),
        rules=tuple(_dicts(constraints.get("resourceRules"))),
        conditions=tuple(
            _compile(str(c.get("name", "")), c.get("expression"))
            for c in _dicts(spec.get("matchConditions"))
        ),
        variables=tuple(
            _compile(str(v.get("name", "")), v.get("expression"))
            for v in _dicts(spec.get("variables"))
        ),
        validations=tuple(validations),
    )


class _Failed(Exception):
    """An expression could not be compiled or evaluated: failurePolicy decides."""


class _Budget:
    """What one policy's expressions may still cost for a request (kube-apiserver's
    runtime budget, `RUNTIME_COST_BUDGET`); each evaluation also has the per-call limit."""

    def __init__(self) -> None:
        self.remaining = RUNTIME_COST_BUDGET

    def charge(self, tracker: CostTracker) -> None:
        if tracker.cost > self.remaining:
            raise _Failed(
                "validation failed due to running out of cost budget, no further validation "
                "rules will be run"
            )
        self.remaining -= tracker.cost


def _run(expr: _Expr, scope: dict[str, Any], budget: _Budget) -> Any:
    if expr.program is None:
        raise _Failed(f"compilation failed for {expr.name}: {expr.error}")
    tracker = CostTracker(PER_CALL_LIMIT)
    try:
        result = expr.program.evaluate(scope, tracker)
    except CelError as exc:
        raise _Failed(
            f"expression '{expr.program.source}' resulted in error: {exc.message}"
        ) from None
    budget.charge(tracker)
    return result


def _boolean(expr: _Expr, scope: dict[str, Any], budget: _Budget) -> bool:
    result = _run(expr, scope, budget)
    if not isinstance(result, bool | celtypes.BoolType):
        raise _Failed(f"expression '{expr.name}' must evaluate to bool")
    return bool(result)


class PolicyAdmission:
    """Evaluates the stored policies and bindings for each write (see the module docstring)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._parsed: dict[str, tuple[str, Policy]] = {}

    def _bound(self) -> Iterator[tuple[Policy, dict[str, Any]]]:
        """(policy, binding) for every binding whose policy exists, by binding name."""
        bindings = self.store.resources.get(BINDINGS)
        policies = self.store.resources.get(POLICIES)
        if bindings is None or policies is None or not bindings.objects:
            return
        for binding in bindings.range(None):
            name = str((binding.get("spec") or {}).get("policyName") or "")
            stored = policies.objects.get(("", name)) if name else None
            if stored is None:
                continue
            rv = str(stored["metadata"].get("resourceVersion", ""))
            cached = self._parsed.get(name)
            if cached is None or cached[0] != rv:
                cached = self._parsed[name] = (rv, parse_policy(stored))
            yield cached[1], binding

    def active(self) -> bool:
        """Any binding stored (else nothing to evaluate, and no request to build)."""
        bindings = self.store.resources.get(BINDINGS)
        return bindings is not None and bool(bindings.objects)

    def validate(
        self,
        attrs: AdmissionAttributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        request: dict[str, Any],
    ) -> None:
        """Raise the first denial; add warnings to the request's."""
        namespace = request_namespace(attrs)
        for policy, binding in self._bound():
            if not self._matches(policy, binding, attrs, namespace):
                continue
            actions = (binding.get("spec") or {}).get("validationActions") or []
            denial = self._evaluate(policy, obj, old, request)
            if denial is None:
                continue
            message, reason = denial
            binding_name = str(binding["metadata"]["name"])
            text = (
                f"ValidatingAdmissionPolicy '{policy.name}' with binding '{binding_name}' "
                f"denied request: {message}"
            )
            if "Warn" in actions:
                attrs.request.warnings.append(
                    f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with "
                    f"binding '{binding_name}': {message}"
                )
            if "Deny" in actions:
                raise self._denied(attrs, text, reason)

    def _matches(
        self,
        policy: Policy,
        binding: dict[str, Any],
        attrs: AdmissionAttributes,
        namespace: str,
    ) -> bool:
        rt: ResourceType = attrs.rt
        if not any(rule_matches(r, attrs, rt, namespace) for r in policy.rules):
            return False
        narrowed = _dicts(
            ((binding.get("spec") or {}).get("matchResources") or {}).get("resourceRules")
        )
        return not narrowed or any(rule_matches(r, attrs, rt, namespace) for r in narrowed)

    def _evaluate(
        self,
        policy: Policy,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        request: dict[str, Any],
    ) -> tuple[str, str] | None:
        """None: allowed (or not applicable); else (message, reason) of the denial."""
        scope = LazyVariables(
            {
                "object": obj,
                "oldObject": old,
                "request": {k: v for k, v in request.items() if k not in ("object", "oldObject")},
            }
        )
        scope["params"] = None
        computed = celtypes.MapType({})
        budget = _Budget()
        scope["variables"] = computed
        try:
            for cond in policy.conditions:
                if not _boolean(cond, scope, budget):
                    return None
            for var in policy.variables:
                computed[celtypes.StringType(var.name)] = _run(var, scope, budget)
            for check in policy.validations:
                if not _boolean(check, scope, budget):
                    return check.message, check.reason
        except _Failed as exc:
            if policy.failure_policy == "Ignore":
                return None
            return f"{exc}", ""
        return None

    @staticmethod
    def _denied(attrs: AdmissionAttributes, text: str, reason: str) -> ApiError:
        reason = reason or "Invalid"
        rt = attrs.rt
        resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
        return ApiError(
            _CODES.get(reason, 422),
            reason,
            f'{resource} "{attrs.name}" is forbidden: {text}',
            group=rt.group,
            kind=rt.plural,
            name=attrs.name,
            causes=[Cause("", text, "")],
        )
