"""Admission webhooks for the simulated API server, called the way kube-apiserver calls them.

The project's own webhooks (defaulting and validating JobSets) are tested against the
simulated cluster, so this module reproduces what a webhook author can observe of
kube-apiserver's `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins:

* Configurations are the `admissionregistration.k8s.io/v1` `MutatingWebhookConfiguration` and
  `ValidatingWebhookConfiguration` objects in the store, read on every request (parsed
  configurations are cached by resourceVersion, so a registration takes effect at once and an
  unchanged one costs a dict lookup). Requests for the webhook configuration and admission
  policy objects themselves never go to webhooks, so a broken webhook cannot lock itself in.
* Matching: `rules` (operations, apiGroups, apiVersions, resources with `*`, `*/*` and
  `res/sub` forms, scope), `namespaceSelector` (labels of the request's namespace; the object's
  own labels for a Namespace being created or updated; not applied to other cluster-scoped
  objects), `objectSelector` (new or old object), `matchPolicy: Equivalent` (a rule naming
  another served version of the same resource matches; the object is relabelled with that
  apiVersion, since the simulated cluster stores one schema for all versions), and
  `matchConditions` (CEL with `object`, `oldObject` and `request`, through `kubesim.machinery.cel`).
* Calling: an HTTPS POST of an AdmissionReview (v1, or v1beta1 for webhooks that only accept
  that) with the request's kind, resource, subresource, name, namespace, operation, user,
  objects, dryRun and Create/Update/DeleteOptions. The server is verified against the
  `caBundle` (the system roots when absent) and the host name: for a `url`, its host; for a
  `service`, `<name>.<namespace>.svc`. `timeoutSeconds` (default 10) bounds each call.
  The client certificate the cluster issued (`client_cert`: CN `kube-apiserver`, from the
  cluster's CA) is presented to every webhook, as kube-apiserver presents the one its
  `--admission-control-config-file` kubeconfig names; the cluster publishes that CA and name
  in `kube-system/extension-apiserver-authentication` (`cluster.py`).
* Mutating webhooks run one after another, ordered by configuration name and then by their
  order in the configuration; their JSONPatch is applied to the object. `reinvocationPolicy:
  IfNeeded` is honoured as upstream does it: a webhook that ran is called once more, after the
  first pass, if a webhook after it changed the object. Validating webhooks run concurrently;
  if several fail, the first in configuration order is reported (upstream reports whichever
  finished first). On DELETE, mutating webhooks whose rules include DELETE are called too (as
  kube-apiserver does) and may deny; a patch is an error, there being no object to patch.
* A denial becomes the webhook's Status: code 403 (Forbidden) when the webhook gave none, 400
  when it gave a code below 400, and the message `admission webhook "<name>" denied the
  request: <message>`. Warnings go to the client's `Warning` headers.
* A failure to call a webhook (refused connection, TLS error, timeout, non-200 answer,
  malformed AdmissionReview, a matchCondition that cannot be evaluated) obeys
  `failurePolicy`: `Fail` (the default) answers 500 InternalError with kube-apiserver's text,
  `Internal error occurred: failed calling webhook "<name>": failed to call webhook: Post
  "<url>?timeout=10s": <reason>`, where the reason is worded as Go would word it
  (`dial tcp 127.0.0.1:9443: connect: connection refused`, `tls: failed to verify certificate:
  x509: certificate signed by unknown authority`, `context deadline exceeded`); `Ignore` skips
  the webhook.
* A dry-run request matching a webhook whose `sideEffects` is neither `None` nor
  `NoneOnDryRun` is refused with 400, as kube-apiserver refuses it.

How a `clientConfig.service` is reached: the `ServiceResolver` the cluster assembly gives
(`kubesim.controllers.endpoints.resolve_service`; the API server imports no simulated
controller).
The Service must exist (else `service "<name>" not found`, as with kube-apiserver's
resolver) and have the port the webhook names. An address annotation
`sim.jobset.x-k8s.io/address: host:port` on the Service wins (the dial hint `jobset dev`
uses for a controller on the host), then `spec.externalName`; otherwise a ready address of
the Service's Endpoints is dialled at its endpoint port, a pod's address through
`WebhookClient.pod_host` (127.0.0.1 for simulated pods, whose IPs nothing listens on; a
runtime giving pods real network namespaces returns their IP). A Service whose Endpoints
have no ready address fails the call with `no endpoints available for service "<name>"`
(then failurePolicy decides); a selector-less Service without any Endpoints object is
reached at 127.0.0.1 and its numeric targetPort. TLS still checks the
`<name>.<namespace>.svc` name.

ValidatingAdmissionPolicies run first, in the server (`policies.py`).

Not modelled: MutatingAdmissionPolicy, the `authorizer` CEL variable,
conversion of objects between versions, audit annotations, CONNECT requests, and
kube-apiserver's request-wide deadline.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonpatch
import orjson
import structlog
from celpy import celtypes

from kubesim.apiserver.core.policies import PolicyAdmission
from kubesim.apiserver.core.request import AdmissionAttributes
from kubesim.apiserver.core.store import ResourceKey, Store
from kubesim.apiserver.core.webhookclient import CallError, PodHost, ServiceResolver, WebhookClient
from kubesim.apiserver.core.webhookconfig import (
    Webhook,
    is_namespace,
    parse_configuration,
    request_namespace,
    rule_matches,
)
from kubesim.apiserver.core.webhookpatch import apply_patch
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.cel import CelError, LazyVariables
from kubesim.machinery.errors import ApiError, Cause

__all__ = ["WebhookAdmission", "admission_request"]


log = structlog.get_logger("sim.admission")

GROUP = "admissionregistration.k8s.io"
MUTATING: ResourceKey = (GROUP, "mutatingwebhookconfigurations")
VALIDATING: ResourceKey = (GROUP, "validatingwebhookconfigurations")

# kube-apiserver never sends requests about these to webhooks: a webhook could otherwise
# make itself impossible to remove or fix.
_EXEMPT_RESOURCES = frozenset(
    {
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    }
)
_DRY_RUN_SAFE = frozenset({"None", "NoneOnDryRun"})
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def admission_request(
    attrs: AdmissionAttributes,
    matched: ResourceType,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> dict[str, Any]:
    """The AdmissionRequest kube-apiserver builds for a request matched as `matched` (a fresh
    uid each time, as upstream): what a webhook is sent and a policy's `request` is."""
    rt, req = attrs.rt, attrs.request
    user: dict[str, Any] = {"username": str(req.user.get("username", ""))}
    if req.user.get("uid"):
        user["uid"] = req.user["uid"]
    if req.user.get("groups"):
        user["groups"] = list(req.user["groups"])
    if req.user.get("extra"):
        user["extra"] = req.user["extra"]
    if attrs.operation == "DELETE":
        options: dict[str, Any] | None = {
            **(attrs.options or {}),
            "kind": "DeleteOptions",
            "apiVersion": "meta.k8s.io/v1",
        }
    elif attrs.operation in ("CREATE", "UPDATE"):
        kind = "CreateOptions" if attrs.operation == "CREATE" else "UpdateOptions"
        options = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if req.field_manager:
            options["fieldManager"] = req.field_manager
    else:
        options = None
    if options is not None and req.dry_run:
        options["dryRun"] = ["All"]
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": matched.group, "version": matched.version, "kind": matched.kind},
        "resource": {
            "group": matched.group,
            "version": matched.version,
            "resource": matched.plural,
        },
        "requestKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "operation": attrs.operation,
        "userInfo": user,
        "object": _versioned(obj, matched),
        "oldObject": _versioned(old, matched),
        "dryRun": req.dry_run,
        "options": options,
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    namespace = request_namespace(attrs)
    if namespace:
        request["namespace"] = namespace
    return request


@dataclass(frozen=True)
class _Invocation:
    """A webhook that matched a request, and the resource version it matched as."""

    hook: Webhook
    rt: ResourceType


def _labels(obj: dict[str, Any] | None) -> dict[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _versioned(obj: dict[str, Any] | None, rt: ResourceType) -> dict[str, Any] | None:
    """The object as the webhook's matched version (only the apiVersion differs here)."""
    if obj is None or obj.get("apiVersion") == rt.group_version:
        return obj
    return {**obj, "apiVersion": rt.group_version}


def _status_error(hook: Webhook, result: Any) -> ApiError:
    """The denial a webhook's `result` Status turns into (upstream's webhookerrors.ToStatusErr)."""
    status = result if isinstance(result, dict) else {}
    try:
        code = int(status.get("code") or 0)
    except (TypeError, ValueError):
        code = 0
    if code == 0:
        code = 403
    elif code < 400:
        code = 400
    message = str(status.get("message") or "")
    reason = str(status.get("reason") or "")
    denied = f'admission webhook "{hook.name}" denied the request'
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    raw_details = status.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    causes = [
        Cause(str(c.get("reason", "")), str(c.get("message", "")), str(c.get("field", "")))
        for c in details.get("causes") or ()
        if isinstance(c, dict)
    ]
    retry = details.get("retryAfterSeconds")
    return ApiError(
        code,
        reason or _REASONS.get(code, ""),
        text,
        group=str(details.get("group", "")),
        kind=str(details.get("kind", "")),
        name=str(details.get("name", "")),
        causes=causes,
        retry_after=retry if isinstance(retry, int) else None,
    )


def _internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


class WebhookAdmission:
    """The simulated server's admission chain: registered mutating, then validating webhooks.

    Calls go through one `WebhookClient` (`webhookclient.py`), whose connections `close()`
    closes.
    """

    def __init__(
        self,
        registry: Registry,
        store: Store,
        resolve_service: ServiceResolver,
        pod_host: PodHost,
        client_cert: Callable[[], tuple[bytes, bytes] | None] = lambda: None,
    ) -> None:
        self.registry = registry
        self.store = store
        self.client = WebhookClient(store, resolve_service, pod_host, client_cert)
        self._parsed: dict[ResourceKey, dict[str, tuple[str, list[Webhook]]]] = {
            MUTATING: {},
            VALIDATING: {},
        }
        self.policies = PolicyAdmission(store)

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        await self.client.close()

    # ------------------------------------------------------------------ configurations

    def webhooks(self, key: ResourceKey) -> list[Webhook]:
        """The current webhooks of one kind, ordered by configuration name then position."""
        rs = self.store.resources.get(key)
        cache = self._parsed[key]
        if rs is None or not rs.objects:
            cache.clear()
            return []
        mutating = key == MUTATING
        out: list[Webhook] = []
        for config in rs.range(None):  # key order: ("", name), i.e. by name as upstream sorts
            meta = config["metadata"]
            name, rv = meta["name"], str(meta.get("resourceVersion", ""))
            cached = cache.get(name)
            if cached is None or cached[0] != rv:
                cached = cache[name] = (rv, parse_configuration(config, mutating))
            out.extend(cached[1])
        if len(cache) > len(rs.objects):
            for gone in [n for n in cache if ("", n) not in rs.objects]:
                del cache[gone]
        return out

    # ------------------------------------------------------------------ matching

    def _namespace_labels(
        self, attrs: AdmissionAttributes, obj: dict[str, Any] | None, namespace: str
    ) -> dict[str, str]:
        if (
            is_namespace(attrs.rt)
            and not attrs.subresource
            and attrs.operation in ("CREATE", "UPDATE")
        ):
            return _labels(obj) or {}
        ns = self.store.get(("", "namespaces"), ("", namespace))
        return _labels(ns) or {}

    def _match(
        self,
        hook: Webhook,
        attrs: AdmissionAttributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> _Invocation | None:
        """Upstream's ShouldCallHook: selectors and rules (exact, then equivalent versions).

        Selector errors are reported only when the rules match, as upstream does, so a broken
        selector affects only the requests the webhook is about. The rules are checked
        first (upstream checks the selectors first): the answer is the same, and a request
        the webhook is not about costs no namespace lookup.
        """
        namespace = request_namespace(attrs)
        invocation = self._rules_match(hook, attrs, namespace)
        if invocation is None:
            return None
        selector_error: ApiError | None = None
        ns_sel = hook.namespace_selector
        if isinstance(ns_sel, ApiError):
            selector_error = ns_sel
        elif not ns_sel.empty() and (namespace or is_namespace(attrs.rt)):
            if not ns_sel.matches(self._namespace_labels(attrs, obj, namespace)):
                return None
        obj_sel = hook.object_selector
        if isinstance(obj_sel, ApiError):
            selector_error = selector_error or obj_sel
        elif not obj_sel.empty():
            new_labels, old_labels = _labels(obj), _labels(old)
            if not (
                (new_labels is not None and obj_sel.matches(new_labels))
                or (old_labels is not None and obj_sel.matches(old_labels))
            ):
                return None
        if selector_error is not None:
            raise selector_error
        return invocation

    def _rules_match(
        self, hook: Webhook, attrs: AdmissionAttributes, namespace: str
    ) -> _Invocation | None:
        """The version the request matches a rule of `hook` as, if any."""
        if any(rule_matches(r, attrs, attrs.rt, namespace) for r in hook.rules):
            return _Invocation(hook, attrs.rt)
        if hook.match_policy != "Equivalent":
            return None
        equivalents = [
            rt
            for rt in self.registry.sharing_storage(attrs.rt.key)
            if rt.version != attrs.rt.version
        ]
        for rule in hook.rules:
            found = next((e for e in equivalents if rule_matches(rule, attrs, e, namespace)), None)
            if found is not None:
                return _Invocation(hook, found)
        return None

    def _conditions_match(self, hook: Webhook, request: dict[str, Any]) -> bool:
        """All matchConditions true → call; any false → skip; otherwise an error (→ policy)."""
        if not hook.match_conditions:
            return True
        # Converted to CEL values only when a condition reads them, as cel-go's lazy
        # unstructured values are: `request.operation == 'CREATE' || ...` never converts
        # the pod being created.
        variables = LazyVariables(
            {
                "object": request.get("object"),
                "oldObject": request.get("oldObject"),
                "request": {k: v for k, v in request.items() if k not in ("object", "oldObject")},
            }
        )
        errors: list[str] = []
        for cond in hook.match_conditions:
            if cond.program is None:
                errors.append(f"matchCondition {cond.name!r}: {cond.error}")
                continue
            try:
                result = cond.program.evaluate(variables)
            except CelError as exc:
                errors.append(f"matchCondition {cond.name!r}: {exc.message}")
                continue
            if not isinstance(result, bool | celtypes.BoolType):
                errors.append(f"matchCondition {cond.name!r}: must evaluate to bool")
            elif not result:
                return False
        if errors:
            raise CallError("; ".join(errors))
        return True

    # ------------------------------------------------------------------ calling

    def _review(
        self,
        inv: _Invocation,
        attrs: AdmissionAttributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The AdmissionRequest for one call (a fresh uid each time, as upstream)."""
        return admission_request(attrs, inv.rt, obj, old)

    async def _invoke(
        self,
        inv: _Invocation,
        attrs: AdmissionAttributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        """Call one matched webhook. Returns its allowing response, or None if it was skipped
        (matchConditions false, or a call failure under `failurePolicy: Ignore`); raises the
        ApiError a client must see for a denial or a failure under `Fail`."""
        hook = inv.hook
        if attrs.request.dry_run and hook.side_effects not in _DRY_RUN_SAFE:
            raise ApiError(
                400, "BadRequest", f'admission webhook "{hook.name}" does not support dry run'
            )
        request = self._review(inv, attrs, obj, old)
        try:
            if not self._conditions_match(hook, request):
                return None
            version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), None)
            if version is None:
                raise CallError(
                    "webhook does not accept known AdmissionReview versions (v1, v1beta1)"
                )
            response = await self.client.post(hook, version, request)
        except CallError as err:
            message = f'failed calling webhook "{hook.name}": {err.reason}'
            if hook.failure_policy == "Ignore":
                log.warning("webhook call failed; ignored", webhook=hook.name, error=message)
                return None
            raise _internal(message) from None
        warnings = response.get("warnings")
        if isinstance(warnings, list):
            attrs.request.warnings.extend(str(w) for w in warnings if w)
        if not response.get("allowed"):
            raise _status_error(hook, response.get("status"))
        return response

    # ------------------------------------------------------------------ mutating

    async def _mutate_one(
        self,
        hook: Webhook,
        attrs: AdmissionAttributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> tuple[dict[str, Any] | None, bool, bool]:
        """Run one mutating webhook: (object after its patch, whether it changed, whether it
        was called)."""
        inv = self._match(hook, attrs, obj, old)
        if inv is None:
            return obj, False, False
        response = await self._invoke(inv, attrs, obj, old)
        if response is None:
            return obj, False, False
        raw_patch = response.get("patch")
        if not raw_patch:
            return obj, False, True
        try:
            operations = orjson.loads(base64.b64decode(str(raw_patch), validate=True))
        except (binascii.Error, ValueError) as exc:
            raise _internal(
                f'admission webhook "{hook.name}" returned an undecodable patch: {exc}'
            ) from None
        if not isinstance(operations, list):
            raise _internal(f'admission webhook "{hook.name}" returned a patch that is not a list')
        if not operations:
            return obj, False, True
        if obj is None:
            raise _internal(
                f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                "supported for this operation"
            )
        try:
            patched = apply_patch(_versioned(obj, inv.rt), operations)
        except (
            jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException,
            KeyError,
            IndexError,
            TypeError,
            ValueError,
        ) as exc:
            raise _internal(
                f'admission webhook "{hook.name}" returned a patch that cannot be applied: {exc}'
            ) from None
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise _internal(
                f'admission webhook "{hook.name}" returned a patch that leaves no object metadata'
            )
        if "apiVersion" in obj:
            patched["apiVersion"] = obj["apiVersion"]
        return patched, patched != obj, True

    async def mutate(
        self, attrs: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        if attrs.rt.group == GROUP and attrs.rt.plural in _EXEMPT_RESOURCES:
            return obj
        hooks = self.webhooks(MUTATING)
        if not hooks:
            return obj
        current: dict[str, Any] | None = obj
        # Upstream's reinvocation bookkeeping: IfNeeded webhooks that ran are remembered; when a
        # later webhook changes the object they become due for one more call after the pass.
        invoked_reinvocable: set[int] = set()
        due: set[int] = set()
        for i, hook in enumerate(hooks):
            current, changed, called = await self._mutate_one(hook, attrs, current, old)
            if changed:
                due |= invoked_reinvocable
                invoked_reinvocable = set()
            if called and hook.reinvoke:
                invoked_reinvocable.add(i)
        for i, hook in enumerate(hooks):
            if i in due:
                current, _, _ = await self._mutate_one(hook, attrs, current, old)
        assert current is not None
        return current

    # ------------------------------------------------------------------ validating

    async def validate(
        self, attrs: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        if attrs.rt.group == GROUP and attrs.rt.plural in _EXEMPT_RESOURCES:
            return
        if attrs.operation == "DELETE":
            # The core calls only `validate` for deletes; kube-apiserver also runs the mutating
            # chain there (it can deny, it cannot patch).
            for hook in self.webhooks(MUTATING):
                await self._mutate_one(hook, attrs, None, old)
        if self.policies.active():
            # kube-apiserver's ValidatingAdmissionPolicy plugin runs before the webhooks.
            request = admission_request(attrs, attrs.rt, obj, old)
            self.policies.validate(attrs, obj, old, request)
        hooks = self.webhooks(VALIDATING)
        if not hooks:
            return
        invocations = [inv for h in hooks if (inv := self._match(h, attrs, obj, old)) is not None]
        if not invocations:
            return
        if len(invocations) == 1:  # the common case: no task to run it beside others
            await self._invoke(invocations[0], attrs, obj, old)
            return
        results = await asyncio.gather(
            *(self._invoke(inv, attrs, obj, old) for inv in invocations),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
