"""What the JobSet controller keeps of each Job in its cache: `job_record`, the informer's
transform.

A child Job as the API server sends it is mostly bytes no reconcile reads (managedFields, the
pod template); 50,000 of them would be gigabytes. `job_record` keeps what the readers listed
below need, in a dict shaped like the Job (same paths, so every reader works on it
unchanged), and shares through one `Interner` every part many Jobs have in common: label
values, owner references, the Complete condition, equal spec and status blocks (its memory
per cached Job is a goal of docs/benchmarks.md). The pod template is kept only while a Job is suspended,
and then only the fields a resume merges into (labels, annotations, nodeSelector,
tolerations, schedulingGates, and each container's name and resources).

The runtime's `jobset.runtime.transforms.slim_job` is the generic transform (drops the pod
spec and managedFields, keeps the rest); placement uses it when no reconciler declared the
Job informer. This one is the JobSet controller's own, about a tenth of that.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

import orjson

from jobset.api import constants as c
from jobset.controllers.jobfacts import CachedJob, job_facts
from jobset.placement.strategy import DOMAIN_KEY, PRIORITY_ANNOTATION, STRATEGY_KEY
from jobset.runtime.client import Object
from jobset.runtime.transforms import Interner

__all__ = ["job_record"]

# What reconciles read of a cached Job, and nothing else (`job_record`). Readers: classify
# (labels below, status counts and conditions, spec parallelism/completions/suspend),
# the failure policy (the Failed condition's reason, message and time; job-index), resume
# (the pod template of a suspended Job, its startTime), act (uid, resourceVersion,
# deletionTimestamp), the owner index and event mapping (the controller ownerReference),
# and planned placement, which shares this cache (domain label and annotation,
# exclusive-topology, priority and strategy annotations, creationTimestamp, the jobset-name
# label, the controller ownerReference).
_JOB_LABELS: Final = (
    c.JOBSET_NAME_KEY,
    c.REPLICATED_JOB_NAME_KEY,
    c.RESTART_ATTEMPT_KEY,
    c.JOB_RESTART_ATTEMPT_KEY,
    DOMAIN_KEY,
)
_JOB_ANNOTATIONS: Final = (c.EXCLUSIVE_KEY, PRIORITY_ANNOTATION, DOMAIN_KEY, STRATEGY_KEY)
_JOB_METADATA: Final = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
_JOB_COUNTS: Final = ("active", "ready", "succeeded", "failed")
_RESUME_POD_FIELDS: Final = ("nodeSelector", "tolerations", "schedulingGates")

_interned = Interner()
_REF_VALUE_TYPES: Final = (str, bool)
_FLAT_VALUE_TYPES: Final = (int, str, float, type(None))


def _owner_references(refs: Any) -> Any:
    """The ownerReferences list, one shared copy per distinct content (all children of a
    JobSet carry the same one)."""
    if not isinstance(refs, list):
        return refs
    items = []
    for ref in refs:  # loops, not all() over generators: this runs for every Job event
        if not isinstance(ref, dict):
            return refs
        item = tuple(ref.items())
        # Owner references hold strings and booleans only; a key of anything else (where
        # `True == 1` could merge different values) is not worth the care.
        for _, v in item:
            if not isinstance(v, _REF_VALUE_TYPES):
                return refs
        items.append(item)

    def build() -> list[dict[str, Any]]:
        return [
            {k: _interned.str(v) if isinstance(v, str) else v for k, v in item} for item in items
        ]

    return _interned.shared(("ownerReferences", *items), build)


def _complete(status: Any) -> dict[str, Any]:
    return _interned.shared(("Complete", status), lambda: {"type": "Complete", "status": status})


def _conditions(conds: Any) -> list[dict[str, Any]] | None:
    """The Complete and Failed conditions (the only ones read): Complete as type and
    status, Failed with reason, message and time too (the failure policy reads them)."""
    if not isinstance(conds, list):
        return None
    out: list[dict[str, Any]] = []
    for cond in conds:
        if not isinstance(cond, dict):
            continue
        ctype = cond.get("type")
        if ctype == "Complete":
            out.append(_complete(cond.get("status")))
        elif ctype == "Failed":
            out.append(
                {
                    k: _interned.str(v) if isinstance(v, str) and k != "lastTransitionTime" else v
                    for k, v in cond.items()
                    if k in ("type", "status", "reason", "message", "lastTransitionTime")
                }
            )
    return out


def job_record(job: Object) -> Object:
    """Cache transform for Jobs: a new, small record of what reconciles read (see
    `_JOB_LABELS` and friends above), with every part many Jobs have in common shared.

    A child Job as stored is large even once its pod spec and managedFields are gone (its
    JobSet keys appear four times: labels and annotations, on the Job and on its pod
    template); this record is small and shared but for what is unique to the Job (name, uid, resourceVersion, creation time, index label). The pod
    template is kept only while the Job is suspended, for the resume merge. A record is a
    dict shaped like the Job (same paths), so every reader works on it unchanged; like
    every cached object it is shared and must not be modified.
    """
    meta = job.get("metadata")
    if not isinstance(meta, dict):
        return job
    out_meta: dict[str, Any] = {"name": meta.get("name")}
    ns = meta.get("namespace")
    if isinstance(ns, str):
        out_meta["namespace"] = _interned.str(ns)
    for key in _JOB_METADATA:
        if key in meta:
            out_meta[key] = meta[key]
    labels = meta.get("labels")
    if isinstance(labels, dict):
        kept = {k: _interned.str(labels[k]) for k in _JOB_LABELS if k in labels}
        index = labels.get(c.JOB_INDEX_KEY)
        if index is not None:
            kept[c.JOB_INDEX_KEY] = index  # unique per Job: not worth a table entry
        out_meta["labels"] = kept
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        kept = {k: _interned.str(annotations[k]) for k in _JOB_ANNOTATIONS if k in annotations}
        if kept:
            out_meta["annotations"] = kept
    if "ownerReferences" in meta:
        out_meta["ownerReferences"] = _owner_references(meta["ownerReferences"])
    # A CachedJob: the dict, plus what every pass reads of it, parsed once here (jobfacts).
    out = CachedJob(
        apiVersion=_interned.str(str(job.get("apiVersion") or "batch/v1")),
        kind=_interned.str(str(job.get("kind") or "Job")),
        metadata=out_meta,
    )
    spec = job.get("spec")
    suspended = False
    if isinstance(spec, dict):
        fields = {k: spec[k] for k in ("parallelism", "completions", "suspend") if k in spec}
        suspended = bool(spec.get("suspend"))
        if suspended:
            fields["template"] = _resume_template(spec.get("template"))
            out["spec"] = fields
        else:
            out["spec"] = _shared_flat("spec", fields)
    status = job.get("status")
    if isinstance(status, dict):
        out["status"] = _status(status, suspended)
    out.facts = job_facts(out)
    return out


def _resume_template(template: Any) -> dict[str, Any]:
    """The pod-template fields a resume merges into (`_RESUME_POD_FIELDS`, labels, annotations)."""
    if not isinstance(template, dict):
        return {}
    tmeta = template.get("metadata") or {}
    tspec = template.get("spec") or {}
    slim: dict[str, Any] = {}
    kept_meta = {k: tmeta[k] for k in ("labels", "annotations") if k in tmeta}
    if kept_meta:
        slim["metadata"] = kept_meta
    kept_spec = {k: tspec[k] for k in _RESUME_POD_FIELDS if k in tspec}
    for key in ("containers", "initContainers"):
        # Names and resources only: what a resume compares with the template (KEP-1150).
        found = tspec.get(key)
        if isinstance(found, list):
            slim_list = [
                {"name": ct.get("name"), "resources": ct.get("resources") or {}}
                for ct in found
                if isinstance(ct, dict)
            ]
            # One shared copy per distinct content: a suspended JobSet's Jobs have equal ones.
            content = orjson.dumps(slim_list, option=orjson.OPT_SORT_KEYS)
            kept_spec[key] = _interned.shared(("containers", content), partial(list, slim_list))
    if kept_spec:
        slim["spec"] = kept_spec
    return slim


def _status(status: dict[str, Any], suspended: bool) -> dict[str, Any]:
    """Counts and the read conditions; shared between Jobs unless it holds something of
    one Job's own (a Failed condition's time, the startTime of a suspended Job)."""
    out = {k: status[k] for k in _JOB_COUNTS if status.get(k) is not None}
    conds = _conditions(status.get("conditions"))
    if conds is not None:
        out["conditions"] = conds
    if suspended and status.get("startTime"):
        out["startTime"] = status["startTime"]  # read by resume only
        return out
    if conds is None:
        return _shared_flat("status", out)
    if any(cond["type"] == "Failed" for cond in conds):
        return out
    return _shared_flat("status", out, tuple(cond["status"] for cond in conds))


def _shared_flat(
    kind: str, fields: dict[str, Any], conditions: tuple[Any, ...] | None = None
) -> dict[str, Any]:
    """`fields` - scalars, and a `conditions` list of shared Complete conditions with these
    statuses (None: no list) - or the shared dict equal to it. A key keeps each value's
    type: `True == 1` in Python, not in JSON."""
    scalars = []
    for k, v in fields.items():
        if k != "conditions":
            if not isinstance(v, _FLAT_VALUE_TYPES):
                return fields
            scalars.append((k, type(v), v))
    return _interned.shared((kind, conditions, *scalars), lambda: fields)
