"""OpenAPI schemas of `scheduling.k8s.io/v1alpha2` Workload and PodGroup (`workload.py`, `podgroup.py`).

kubectl v1.32 has no compiled-in knowledge of these alpha types, so `kubectl explain
workload.spec` and client-side tooling read everything from the server's OpenAPI document;
these schemas are published there (`http/openapi.py`) the way a CRD's are. Descriptions are short
summaries of the Kubernetes API documentation, in this project's words.
"""

from __future__ import annotations

from typing import Any, Final

Schema = dict[str, Any]


def _s(description: str, **extra: Any) -> Schema:
    return {"type": "string", "description": description, **extra}


def _obj(description: str, props: Schema, required: tuple[str, ...] = ()) -> Schema:
    out: Schema = {"type": "object", "description": description, "properties": props}
    if required:
        out["required"] = list(required)
    return out


_GANG = _obj(
    "All-or-nothing placement: the scheduler binds pods of the group only when minCount of "
    "them can be placed at the same time.",
    {
        "minCount": {
            "type": "integer",
            "format": "int32",
            "description": "How many pods must be schedulable together before any is bound "
            "(at least 1).",
        }
    },
    ("minCount",),
)

_POLICY = _obj(
    "How the group's pods are scheduled; exactly one of basic and gang is set.",
    {
        "basic": _obj("Schedule each pod on its own, as without a group.", {}),
        "gang": _GANG,
    },
)

_CONSTRAINTS = _obj(
    "Placement constraints for the whole group (TopologyAwareWorkloadScheduling).",
    {
        "topology": {
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "description": "At most one topology constraint.",
            "items": _obj(
                "All pods of the group land in one domain of this node label.",
                {"key": _s("Node label key naming the topology domain, e.g. a rack label.")},
                ("key",),
            ),
        }
    },
)

_PREEMPTION: Final[Schema] = {
    "disruptionMode": _s(
        "Pod: pods of the group may be disrupted one by one. PodGroup: the group is "
        "preempted as a whole (WorkloadAwarePreemption).",
        enum=["Pod", "PodGroup"],
    ),
    "priorityClassName": _s("PriorityClass whose value is the group's priority."),
    "priority": {
        "type": "integer",
        "format": "int32",
        "description": "The group's priority, resolved from priorityClassName by admission.",
    },
}

_TEMPLATE = _obj(
    "A template of pod groups within a Workload.",
    {
        "name": _s("Unique name of the template in the Workload (a DNS label)."),
        "schedulingPolicy": _POLICY,
        "schedulingConstraints": _CONSTRAINTS,
        **_PREEMPTION,
    },
    ("name", "schedulingPolicy"),
)

_META_REF: Final[Schema] = {
    "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
    "description": "Standard object's metadata.",
}


def _top(description: str, kind: str, props: Schema) -> Schema:
    return {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": _s("The versioned schema of this representation of an object."),
            "kind": _s("The REST resource this object represents."),
            "metadata": _META_REF,
            **props,
        },
        "required": ["spec"],
        "x-kubernetes-group-version-kind": [
            {"group": "scheduling.k8s.io", "version": "v1alpha2", "kind": kind}
        ],
    }


WORKLOAD: Final = _top(
    "Workload describes how a set of pods is scheduled as groups: the templates its "
    "controller creates PodGroups from (GenericWorkload).",
    "Workload",
    {
        "spec": _obj(
            "The desired state of the Workload.",
            {
                "controllerRef": _obj(
                    "The object that owns this Workload, e.g. a JobSet. Immutable.",
                    {
                        "apiGroup": _s("API group of the referenced object."),
                        "kind": _s("Kind of the referenced object."),
                        "name": _s("Name of the referenced object."),
                    },
                    ("kind", "name"),
                ),
                "podGroupTemplates": {
                    "type": "array",
                    "description": "Templates of pod groups, at most 8. Immutable.",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": _TEMPLATE,
                },
            },
            ("podGroupTemplates",),
        )
    },
)

_CONDITION = _obj(
    "One observation of the group's state.",
    {
        "type": _s("PodGroupScheduled or DisruptionTarget."),
        "status": _s("True, False or Unknown."),
        "reason": _s("Machine-readable reason, e.g. Unschedulable."),
        "message": _s("Human-readable detail."),
        "lastTransitionTime": _s("When the status last changed.", format="date-time"),
        "observedGeneration": {"type": "integer", "format": "int64"},
    },
    ("type", "status", "lastTransitionTime", "reason", "message"),
)

PODGROUP: Final = _top(
    "PodGroup is a runtime group of pods scheduled together; pods join it with "
    "spec.schedulingGroup.podGroupName (GenericWorkload).",
    "PodGroup",
    {
        "spec": _obj(
            "The desired state of the PodGroup; immutable.",
            {
                "podGroupTemplateRef": _obj(
                    "The template this group was created from.",
                    {
                        "workload": _obj(
                            "A template of a Workload.",
                            {
                                "workloadName": _s("Name of the Workload."),
                                "podGroupTemplateName": _s("Name of the template in it."),
                            },
                            ("workloadName", "podGroupTemplateName"),
                        )
                    },
                ),
                "schedulingPolicy": _POLICY,
                "schedulingConstraints": _CONSTRAINTS,
                **_PREEMPTION,
            },
            ("schedulingPolicy",),
        ),
        "status": _obj(
            "The observed state, written by the scheduler.",
            {
                "conditions": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": _CONDITION,
                }
            },
        ),
    },
)
