"""Which part of the simulator a py-spy sample belongs to, by what its code was doing
(the API server's storage, its watch serving, the scheduler's filter, ...), not by which
component's task ran it: an EndpointSlice write is charged to the API server parts it runs
through, and the controller's own planning to the controller.

A sample goes to the part of its innermost frame that matches a rule (frames of the shared
machinery - selectors, schemas, CEL - and of kubeutil are passed over, so a label match
inside a watcher's filter counts as watch fan-out, not as validation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

OTHER: Final = "other (event loop, aiohttp, ssl, idle)"

# (part, substrings of a frame's "func (file:line)"), most specific first within a frame.
PARTS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("webhook calls", ("core/webhookclient.py", "core/webhookhttp.py", "apiserver/reviews.py")),
    (
        "API server: admission",
        ("core/admission.py", "core/policies.py", "core/webhookconfig.py", "core/webhookpatch.py"),
    ),
    ("API server: watch encode + write", ("WatchEvent.encoded", "http/watchstream.py")),
    ("API server: watch fan-out", ("Watcher.offer", "Watcher._matches", "ResourceStore.record")),
    ("API server: storage", ("core/store.py", "core/deleter.py", "core/persistence.py")),
    (
        "API server: validation, defaulting, managedFields",
        ("core/apicore.py", "core/fieldmanagers.py", "core/objects.py", "apiserver/registry/"),
    ),
    ("API server: HTTP, decode, encode", ("apiserver/http/", "apiserver/core/")),
    ("EndpointSlice + Endpoints controller", ("controllers/endpoints",)),
    ("DNS", ("kubesim/dns/",)),
    (
        "scheduler: filter",
        ("_PodContext.reasons", "_PodContext.__init__", "_PodContext._", "_fit_score", "_rotation"),
    ),
    ("scheduler: score", ("_PodContext.score", "_least_allocated")),
    ("scheduler: queue, snapshot, bind", ("controllers/scheduler/",)),
    ("Job controller", ("controllers/job",)),
    ("kubelet", ("kubesim/kubelet/",)),
    ("Events", ("kubesim/base/events.py",)),
    ("other controllers", ("kubesim/controllers/",)),
    ("controller loops + work queues", ("kubesim/base/",)),
)
PASSED_OVER: Final = ("kubesim/machinery/", "kubeutil/")


def part_of(frames: Sequence[str]) -> str:
    """The part of one sample; `frames` outermost first, as py-spy's raw format lists them."""
    for frame in reversed(frames):
        if any(p in frame for p in PASSED_OVER):
            continue
        for part, patterns in PARTS:
            if any(p in frame for p in patterns):
                return part
    return OTHER
