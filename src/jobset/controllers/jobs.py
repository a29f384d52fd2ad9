"""Child Jobs: building one from its ReplicatedJob template, and resuming a suspended one.

A child Job is the ReplicatedJob's Job template with:

- name `<jobset>-<rjob>-<index>` in the JobSet's namespace - deterministic, so creating it
  again after a crash is an AlreadyExists, never a duplicate;
- the template's labels and annotations, plus every JobSet key (jobset name and uid,
  replicatedjob name and replicas, global replicas, job index, global index, job key,
  restart attempt, per-job restart attempt with RestartJob, group name, replicas and index,
  coordinator) as both labels and annotations, on the Job and on its pod template;
- exclusive-placement annotations (see `jobset.placement.labels`);
- with ExecutionAttemptsTracking, the execution attempt as an annotation only
  (see `jobset.controllers.execution_attempts`);
- a controller ownerReference to the JobSet with blockOwnerDeletion;
- `suspend` = the JobSet's suspend, `subdomain` when DNS hostnames are enabled, and the
  volumes of volumeClaimPolicies it mounts.

Resume (upstream `resumeJob`): labels, annotations, nodeSelector, tolerations and
schedulingGates of the ReplicatedJob's pod template - which Kueue may change while the
JobSet is suspended - are merged into the Job's pod template (template values win for map
keys; list items are added when missing), then `suspend: false`. With the
MutablePodResourcesForSuspendedJobSets gate (KEP-1150) the containers' and init
containers' `resources.requests` and `limits` become the template's too (matched by name;
claims stay the Job's), in the same request, a strategic merge patch so that the
containers merge by name. The API server accepts that only with Kubernetes'
MutablePodResourcesForSuspendedJobs (KEP-5440); otherwise the Job stays suspended and the
controller says why in a Warning event (`FailedResourcePropagation`), as the KEP decides -
the Job is not deleted and recreated, which would lose its state.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence, Set
from typing import Any, Final, overload

import orjson

from jobset.api import constants as c
from jobset.api.gang import gang_mode, set_scheduling_group
from jobset.api.presets import apply_presets_in_place, preset_settings
from jobset.api.types import (
    coordinator_endpoint,
    dns_hostnames_enabled,
    global_job_index,
    global_replicas,
    group_job_index,
    group_name,
    group_replicas,
    is_suspended,
    job_key,
    job_name,
    name_of,
    namespace_of,
    owner_reference,
    replicas,
    subdomain,
)
from jobset.api.validation import semantic_equal
from jobset.controllers.classify import ChildLists, job_restarts
from jobset.controllers.jobfacts import facts_of, split_job_name
from jobset.controllers.volumes import add_volumes
from jobset.placement.labels import (
    add_node_selector_strategy,
    exclusive_placement_annotations,
    uses_node_selector_strategy,
)

__all__ = [
    "BodyTemplate",
    "JobKeys",
    "NewJob",
    "PendingJobs",
    "all_exist",
    "construct_job",
    "existing_indices",
    "indices_of",
    "jobset_keys",
    "merge_lists",
    "merge_maps",
    "missing_indices",
    "resource_patches",
    "resume_patch",
    "template_json",
]

Job = dict[str, Any]


def _opt(value: int | None) -> str:
    return "" if value is None else str(value)


def jobset_keys(
    js: Mapping[str, Any], rjob: Mapping[str, Any], job_index: int, *, restart_job: bool = False
) -> dict[str, str]:
    """Every JobSet label (also stamped as annotation) of the Job `job_index` of `rjob`."""
    return JobKeys(js, rjob, restart_job=restart_job).keys(job_index)


class JobKeys:
    """`jobset_keys` for many Jobs of one ReplicatedJob: what all of them share (names,
    replica counts, the ReplicatedJob's offsets in the JobSet and in its group, restart
    targets, placement annotations) worked out once, so that a Job's keys cost its index.

    Computed per Job, the counts and offsets walk the ReplicatedJobs several times per Job
    (and, with RestartJob, the whole restart list is built per Job); the keys
    are the same strings in the same order as computed one Job at a time.
    """

    __slots__ = (
        "_coordinator",
        "_global_base",
        "_group_base",
        "_head",
        "_jsname",
        "_namespace",
        "_replicas",
        "_rjob_name",
        "_tail",
        "_targets",
        "annotations",
        "placement",
    )

    def __init__(
        self,
        js: Mapping[str, Any],
        rjob: Mapping[str, Any],
        *,
        restart_job: bool = False,
        execution_attempt: int | None = None,
    ) -> None:
        jsname = name_of(js)
        rjob_name = str(rjob.get("name") or "")
        group = group_name(rjob)
        status = js.get("status") or {}
        self._jsname, self._rjob_name, self._namespace = jsname, rjob_name, namespace_of(js)
        self._head = {
            c.JOBSET_NAME_KEY: jsname,
            c.JOBSET_UID_KEY: str((js.get("metadata") or {}).get("uid") or ""),
            c.REPLICATED_JOB_NAME_KEY: rjob_name,
            c.RESTART_ATTEMPT_KEY: str(int(status.get("restarts") or 0)),
        }
        self._targets = job_restarts(js, status, rjob_name) if restart_job else None
        self._replicas = {
            c.REPLICATED_JOB_REPLICAS_KEY: str(replicas(rjob)),
            c.GLOBAL_REPLICAS_KEY: str(global_replicas(js)),
        }
        # Offsets: the index of this ReplicatedJob's first Job (None: not in the JobSet).
        self._global_base = global_job_index(js, rjob_name, 0)
        self._group_base = group_job_index(js, group, rjob_name, 0)
        self._tail = {c.GROUP_NAME_KEY: group, c.GROUP_REPLICAS_KEY: str(group_replicas(js, group))}
        spec = js.get("spec") or {}
        self._coordinator = (
            coordinator_endpoint(js) if spec.get("coordinator") is not None else None
        )
        self.placement = exclusive_placement_annotations(js, rjob)
        # Stamped as annotations only: placement's, and the execution attempt when tracked.
        self.annotations = dict(self.placement)
        if execution_attempt is not None:
            self.annotations[c.EXECUTION_ATTEMPT_KEY] = str(execution_attempt)

    def keys(self, job_index: int) -> dict[str, str]:
        """The keys of Job `job_index`, a new dict."""
        keys = dict(self._head)
        targets = self._targets
        if targets is not None:
            keys[c.JOB_RESTART_ATTEMPT_KEY] = str(
                targets[job_index] if job_index < len(targets) else 0
            )
        keys.update(self._replicas)
        _, index, key, global_index, group_index = self.per_job(job_index)
        keys[c.JOB_INDEX_KEY] = index
        keys[c.JOB_KEY] = key
        keys[c.JOB_GLOBAL_INDEX_KEY] = global_index
        keys[c.GROUP_NAME_KEY] = self._tail[c.GROUP_NAME_KEY]
        keys[c.GROUP_REPLICAS_KEY] = self._tail[c.GROUP_REPLICAS_KEY]
        keys[c.JOB_GROUP_INDEX_KEY] = group_index
        if self._coordinator is not None:
            keys[c.COORDINATOR_KEY] = self._coordinator
        return keys

    @property
    def jobset_name(self) -> str:
        return self._jsname

    @property
    def namespace(self) -> str:
        return self._namespace

    def per_job(self, job_index: int) -> tuple[str, str, str, str, str]:
        """What differs between the Jobs of the ReplicatedJob (with RestartJob off): the
        Job's name and its job-index, job-key, job-global-index and job-group-index values."""
        name = job_name(self._jsname, self._rjob_name, job_index)
        gbase, grbase = self._global_base, self._group_base
        return (
            name,
            str(job_index),
            job_key(self._namespace, name),
            "" if gbase is None else str(gbase + job_index),
            "" if grbase is None else str(grbase + job_index),
        )


def _stamp(meta: dict[str, Any], keys: Mapping[str, str], annotations: Mapping[str, str]) -> None:
    meta["labels"] = {**(meta.get("labels") or {}), **keys}
    meta["annotations"] = {**(meta.get("annotations") or {}), **keys, **annotations}


def template_json(rjob: Mapping[str, Any]) -> bytes:
    """The ReplicatedJob's Job template serialised: what `construct_job` parses for each Job.

    Serialised once per ReplicatedJob (`PendingJobs` keeps it for all the Jobs it builds) and
    parsed once per Job, each Job gets a template of its own - nothing mutable is shared
    with the JobSet (the cache's object) or with its sibling Jobs - at the cost of one JSON
    parse, a fraction of the two deep copies per Job it replaces. Objects from the API are JSON; anything orjson refuses is deep-copied instead.
    """
    try:
        return orjson.dumps(rjob.get("template") or {})
    except TypeError:
        return b""


def _own_template(rjob: Mapping[str, Any], serialised: bytes | None) -> dict[str, Any]:
    if serialised is None:
        serialised = template_json(rjob)
    if serialised:
        out = orjson.loads(serialised)
        if isinstance(out, dict):
            return out
    return copy.deepcopy(dict(rjob.get("template") or {}))


def construct_job(
    js: Mapping[str, Any],
    rjob: Mapping[str, Any],
    job_index: int,
    *,
    restart_job: bool = False,
    template: bytes | None = None,
    keys: JobKeys | None = None,
) -> Job:
    """The child Job `job_index` of `rjob`, ready to POST.

    `template` is `template_json(rjob)` and `keys` is `JobKeys(js, rjob, restart_job=...)`
    when the caller builds many Jobs of `rjob` (computed here otherwise). The Job shares no
    mutable part with `js` or `rjob`.
    """
    owned = _own_template(rjob, template)
    # Framework presets (opt-in by annotation) add distributed-training env vars first.
    apply_presets_in_place(js, rjob, job_index, owned)
    tmeta: Mapping[str, Any] = owned.get("metadata") or {}
    spec = owned.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    job: Job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(name_of(js), str(rjob.get("name") or ""), job_index),
            "namespace": namespace_of(js),
            "labels": tmeta.get("labels") or {},
            "annotations": tmeta.get("annotations") or {},
            "ownerReferences": [owner_reference(js)],
        },
        "spec": spec,
    }
    if keys is None:
        keys = JobKeys(js, rjob, restart_job=restart_job)
    annotations = keys.annotations
    pod_template = spec.setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    pod_spec = pod_template.setdefault("spec", {})
    stamped = keys.keys(job_index)
    _stamp(job["metadata"], stamped, annotations)
    _stamp(pod_meta, stamped, annotations)
    if dns_hostnames_enabled(js):
        pod_spec["subdomain"] = subdomain(js)
    set_scheduling_group(js, str(rjob.get("name") or ""), job_index, pod_spec)
    if uses_node_selector_strategy(job):
        add_node_selector_strategy(job)
    spec["suspend"] = is_suspended(js)
    if (js.get("spec") or {}).get("volumeClaimPolicies"):
        add_volumes(job, js)
    return job


# Holes of a `BodyTemplate`, in `JobKeys.per_job` order: name, job-index, job-key,
# global index, group index. Control characters no Job field holds (orjson writes \x01 as
# \u0001); a template that held one anyway fails the template's own check and is not used.
_HOLES: Final = tuple(f"\x01{n}\x01" for n in "NIKGR")
_HOLE_AT: Final = re.compile(rb"\\u0001([NIKGR])\\u0001")
_HOLE_INDEX: Final = {ord(n): i for i, n in enumerate("NIKGR")}


class NewJob:
    """A Job to create as the controller sends it: its JSON body and the names it needs,
    or (`body` None) the Job itself, for placement to write its domain into first."""

    __slots__ = ("body", "job", "name", "namespace", "owner")

    def __init__(
        self, name: str, namespace: str, owner: str, body: bytes | None, job: Job | None = None
    ) -> None:
        self.name, self.namespace, self.owner = name, namespace, owner
        self.body, self.job = body, job


class BodyTemplate:
    """The JSON body of every Job of one ReplicatedJob, encoded once with holes for what
    differs between them (`JobKeys.per_job`): a body is its pieces joined, byte for byte
    `orjson.dumps(construct_job(...))`, without building the Job (building every body as a
    dict and encoding it was a visible share of the controller's CPU per created Job).

    Only where the Jobs differ in nothing else: not with framework presets (per-Job ranks
    and env), the node-selector placement strategy (per-Job selector), volumeClaimPolicies
    or RestartJob (per-Job attempt). `of` checks the template against two Jobs built in
    full and gives None (build each Job) when either differs.
    """

    __slots__ = ("_fixed", "_holes", "_keys")

    def __init__(self, fixed: list[bytes], holes: list[int], keys: JobKeys) -> None:
        # The body is fixed[0], value of holes[0], fixed[1], ..., fixed[-1].
        assert len(fixed) == len(holes) + 1
        self._fixed = fixed
        self._holes = holes
        self._keys = keys

    @classmethod
    def of(
        cls,
        js: Mapping[str, Any],
        rjob: Mapping[str, Any],
        *,
        template: bytes,
        keys: JobKeys,
        restart_job: bool,
    ) -> BodyTemplate | None:
        if (
            restart_job
            or not template
            or preset_settings(js, rjob)
            or (js.get("spec") or {}).get("volumeClaimPolicies")
            or c.NODE_SELECTOR_STRATEGY_KEY in keys.placement
        ):
            return None
        sample = construct_job(js, rjob, 0, template=template, keys=keys)
        if uses_node_selector_strategy(sample):
            return None
        sample["metadata"]["name"] = _HOLES[0]
        if gang_mode(js) == "Job":  # each Job is a gang named as the Job
            sample["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"] = _HOLES[0]
        pod_meta = sample["spec"]["template"]["metadata"]
        for meta in (sample["metadata"], pod_meta):
            for field in ("labels", "annotations"):
                stamped = meta[field]
                for key, hole in zip(
                    (c.JOB_INDEX_KEY, c.JOB_KEY, c.JOB_GLOBAL_INDEX_KEY, c.JOB_GROUP_INDEX_KEY),
                    _HOLES[1:],
                    strict=True,
                ):
                    stamped[key] = hole
        encoded = orjson.dumps(sample)
        fixed: list[bytes] = []
        holes: list[int] = []
        at = 0
        for found in _HOLE_AT.finditer(encoded):
            fixed.append(encoded[at : found.start()])
            holes.append(_HOLE_INDEX[found.group(1)[0]])
            at = found.end()
        fixed.append(encoded[at:])
        out = cls(fixed, holes, keys)
        for idx in (0, 1):
            full = construct_job(js, rjob, idx, template=template, keys=keys)
            if out.render(idx) != orjson.dumps(full):
                return None
        return out

    def render(self, job_index: int) -> bytes:
        """The body of Job `job_index`."""
        return self.named(job_index)[1]

    def named(self, job_index: int) -> tuple[str, bytes]:
        """The name and the body of Job `job_index`."""
        name, index, key, global_index, group_index = self._keys.per_job(job_index)
        # The name is the one value that is not digits or hex: encoded as orjson would.
        filled = (
            orjson.dumps(name)[1:-1],
            index.encode(),
            key.encode(),
            global_index.encode(),
            group_index.encode(),
        )
        fixed = self._fixed
        out = [fixed[0]]
        for at, hole in enumerate(self._holes, 1):
            out.append(filled[hole])
            out.append(fixed[at])
        return name, b"".join(out)


class PendingJobs(Sequence[Job]):
    """The child Jobs a pass will create, each built only when it is read.

    A restart of a large JobSet misses every Job, and building all their bodies before the
    first request would hold them all in memory at once. This holds
    `(ReplicatedJob, indices)` instead; iterating builds one body at a time (and a consumer
    that sends each before taking the next keeps O(its parallelism) bodies alive). Reading
    the same position twice builds two equal bodies: `construct_job` is pure.
    """

    __slots__ = (
        "_attempt",
        "_bodies",
        "_groups",
        "_js",
        "_keys",
        "_len",
        "_restart_job",
        "_templates",
    )

    def __init__(
        self,
        js: Mapping[str, Any] | None = None,
        *,
        restart_job: bool = False,
        execution_attempt: int | None = None,
    ) -> None:
        self._js: Mapping[str, Any] = js or {}
        self._restart_job = restart_job
        # The execution-attempt annotation's value (None: ExecutionAttemptsTracking off).
        self._attempt = execution_attempt
        self._groups: list[tuple[Mapping[str, Any], list[int]]] = []
        self._len = 0
        # Each ReplicatedJob's template serialised once, for all its Jobs (see `template_json`).
        self._templates: dict[int, bytes] = {}
        # And what their keys share (`JobKeys`), worked out once per ReplicatedJob too.
        self._keys: dict[int, JobKeys] = {}
        # And their bodies' template (`BodyTemplate`; None: each body is built), for `encoded`.
        self._bodies: dict[int, BodyTemplate | None] = {}

    def add(self, rjob: Mapping[str, Any], indices: list[int]) -> None:
        """Also create the Jobs `indices` of `rjob` (after those already added)."""
        if indices:
            self._groups.append((rjob, indices))
            self._len += len(indices)

    def names(self) -> list[str]:
        """The names of the Jobs, without building them."""
        jsname = name_of(self._js)
        return [
            job_name(jsname, str(rjob.get("name") or ""), idx)
            for rjob, indices in self._groups
            for idx in indices
        ]

    def _shared(self, rjob: Mapping[str, Any]) -> tuple[bytes, JobKeys]:
        serialised = self._templates.get(id(rjob))  # rjob is held in _groups: ids are stable
        if serialised is None:
            serialised = self._templates[id(rjob)] = template_json(rjob)
        keys = self._keys.get(id(rjob))
        if keys is None:
            keys = self._keys[id(rjob)] = JobKeys(
                self._js, rjob, restart_job=self._restart_job, execution_attempt=self._attempt
            )
        return serialised, keys

    def _build(self, rjob: Mapping[str, Any], idx: int) -> Job:
        serialised, keys = self._shared(rjob)
        return construct_job(
            self._js, rjob, idx, restart_job=self._restart_job, template=serialised, keys=keys
        )

    def encoded(self, *, exclusive_as_jobs: bool = False) -> Iterator[NewJob]:
        """The Jobs in order as the controller POSTs them: each body is
        `orjson.dumps(job)` of the Job `__iter__` gives at that position, from the
        ReplicatedJob's `BodyTemplate` where it has one. Built one at a time, like those.

        `exclusive_as_jobs`: the Jobs with exclusive placement come as Jobs (`NewJob.job`),
        not bodies - a placement strategy may pick their domain before they are sent.
        """
        for rjob, indices in self._groups:
            serialised, keys = self._shared(rjob)
            if exclusive_as_jobs and c.EXCLUSIVE_KEY in keys.placement:
                for idx in indices:
                    job = self._build(rjob, idx)
                    meta = job["metadata"]
                    owner_label = str((meta.get("labels") or {}).get(c.JOBSET_NAME_KEY) or "")
                    yield NewJob(str(meta["name"]), keys.namespace, owner_label, None, job)
                continue
            if id(rjob) not in self._bodies:
                self._bodies[id(rjob)] = BodyTemplate.of(
                    self._js,
                    rjob,
                    template=serialised,
                    keys=keys,
                    restart_job=self._restart_job,
                )
            body = self._bodies[id(rjob)]
            ns, owner = keys.namespace, keys.jobset_name
            for idx in indices:
                if body is not None:
                    name, encoded = body.named(idx)
                    yield NewJob(name, ns, owner, encoded)
                else:
                    job = self._build(rjob, idx)
                    meta = job["metadata"]
                    owner_label = str((meta.get("labels") or {}).get(c.JOBSET_NAME_KEY) or "")
                    yield NewJob(str(meta["name"]), ns, owner_label, orjson.dumps(job))

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Job]:
        for rjob, indices in self._groups:
            for idx in indices:
                yield self._build(rjob, idx)

    @overload
    def __getitem__(self, i: int) -> Job: ...

    @overload
    def __getitem__(self, i: slice) -> list[Job]: ...

    def __getitem__(self, i: int | slice) -> Job | list[Job]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._len))]
        k = i + self._len if i < 0 else i
        if not 0 <= k < self._len:
            raise IndexError("PendingJobs index out of range")
        for rjob, indices in self._groups:
            if k < len(indices):
                return self._build(rjob, indices[k])
            k -= len(indices)
        raise AssertionError("unreachable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PendingJobs({self.names()!r})"


def existing_indices(jobset_name: str, names: Set[str]) -> dict[str, list[int]]:
    """The Job indices among `names`, by ReplicatedJob: `<jobset>-<rjob>-<index>` parsed.

    One pass over what exists, never over what the spec asks for: a JobSet's `replicas` is
    the tenant's number, the Jobs that exist are the cluster's. The index is the part after
    the last `-` (ReplicatedJob names may contain `-`, indices cannot) and must be written as
    `job_name` writes it (ASCII digits, no leading zero), so each name gives at most one
    (ReplicatedJob, index), and distinct names distinct pairs.
    """
    prefix = f"{jobset_name}-"
    cut = len(prefix)
    out: dict[str, list[int]] = {}
    for name in names:
        # A name of this JobSet's with no second "-" after the prefix leaves the JobSet's own
        # name as head, which does not start with the prefix: skipped, as it should be.
        head, index = split_job_name(name)
        if index is not None and head.startswith(prefix):
            out.setdefault(head[cut:], []).append(index)
    return out


def indices_of(
    jobset_name: str, jobs: Iterable[Mapping[str, Any]], also: Iterable[str] = ()
) -> dict[str, set[int]]:
    """`existing_indices` over the names of `jobs` plus the names `also` (Jobs created but
    not yet seen), by ReplicatedJob, as sets (a name in both counts once).

    Each Job's name is read split through its parsed facts (`jobfacts`: once per cached
    record), so a pass over a large JobSet does not split every name again.
    """
    prefix = f"{jobset_name}-"
    cut = len(prefix)
    out: dict[str, set[int]] = {}
    # `head` is the name up to its last "-": `<jobset>-<rjob>` when the name is one of this
    # JobSet's (a name without a second "-" after the prefix leaves just the JobSet's name).
    rjob_of_head: dict[str, str | None] = {}
    for job in jobs:
        facts = facts_of(job)
        if facts.name_index is None:
            continue
        head = facts.name_head
        if head in rjob_of_head:
            rjob = rjob_of_head[head]
        else:
            rjob = rjob_of_head[head] = head[cut:] if head.startswith(prefix) else None
        if rjob is not None:
            out.setdefault(rjob, set()).add(facts.name_index)
    for rjob_name, indices in existing_indices(jobset_name, set(also)).items():
        out.setdefault(rjob_name, set()).update(indices)
    return out


def all_exist(indices: Iterable[int], count: int) -> bool:
    """Every index in [0, count) is among `indices` (distinct, as `existing_indices` gives
    them): counted, in O(len(indices)) and no allocation."""
    return sum(1 for i in indices if 0 <= i < count) == count


def _gaps(indices: Iterable[int], count: int) -> list[int]:
    """The indices in [0, count) not among `indices`: O(E log E + missing), E = len(indices)."""
    present = sorted({i for i in indices if 0 <= i < count})
    if len(present) == count:
        return []
    out: list[int] = []
    start = 0
    for i in present:
        out.extend(range(start, i))
        start = i + 1
    out.extend(range(start, count))
    return out


def missing_indices(
    js: Mapping[str, Any],
    rjob: Mapping[str, Any],
    children: ChildLists,
    *,
    existing: Set[str] | None = None,
    indices: Collection[int] | None = None,
) -> list[int]:
    """The indices of the Jobs of `rjob` that do not exist (in any state, previous included).

    `existing` are the names that exist (default: the children's); `indices`, when given,
    are this ReplicatedJob's existing indices (distinct) already parsed (`existing_indices`, once per
    pass for every ReplicatedJob). The work is in proportion to the Jobs that exist plus
    those missing, never to `replicas` itself: a pass over a JobSet whose Jobs all exist
    walks no replica.

    With `BlockingRecreate`, nothing is created while any previous Job still exists, so a
    restart replaces the whole set at once instead of Job by Job.
    """
    policy = (js.get("spec") or {}).get("failurePolicy") or {}
    if children.previous and policy.get("restartStrategy") == c.RESTART_STRATEGY_BLOCKING_RECREATE:
        return []
    count = replicas(rjob)
    if indices is None:
        names = existing if existing is not None else children.names()
        indices = existing_indices(name_of(js), names).get(str(rjob.get("name") or ""), [])
    elif len(indices) == count and (not indices or (min(indices) >= 0 and max(indices) < count)):
        return []  # as many distinct indices as replicas, all in range: all exist
    if all_exist(indices, count):
        return []
    return _gaps(indices, count)


# ------------------------------------------------------------------------------ resume


def merge_maps(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any]:
    """`old` updated with `new` (new values win)."""
    return {**(old or {}), **(new or {})}


def merge_lists(old: Sequence[Any] | None, new: Sequence[Any] | None) -> list[Any]:
    """`old`, then the items of `new` not already in it (whole-item equality).

    Upstream builds this union through a Go map, so its order is random; keeping `old`'s
    order and appending makes the result stable, so resuming twice writes nothing new.
    """
    out = list(old or [])
    for item in new or []:
        if item not in out:
            out.append(item)
    return out


def resource_patches(
    job: Mapping[str, Any], rjob: Mapping[str, Any] | None
) -> dict[str, list[dict[str, Any]]]:
    """Strategic-merge entries giving the Job's containers the template's requests and
    limits (by container name), for the lists where one differs; {} when none does.

    A key the template dropped is sent as null (removed); `claims` is never touched.
    """
    if rjob is None:
        return {}
    jpod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    ppod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get(
        "spec"
    ) or {}
    out: dict[str, list[dict[str, Any]]] = {}
    for key in ("containers", "initContainers"):
        wanted = {
            ct.get("name"): ct.get("resources") or {}
            for ct in ppod.get(key) or []
            if isinstance(ct, Mapping)
        }
        entries = []
        for ct in jpod.get(key) or []:
            name = ct.get("name") if isinstance(ct, Mapping) else None
            if name not in wanted:
                continue
            have = ct.get("resources") or {}
            change: dict[str, Any] = {}
            for field in ("requests", "limits"):
                new, old = wanted[name].get(field) or {}, have.get(field) or {}
                if not semantic_equal({field: new}, {field: old}):  # quantities by amount
                    change[field] = {**{k: None for k in old if k not in new}, **new}
            if change:
                entries.append({"name": name, "resources": change})
        if entries:
            out[key] = entries
    return out


def resume_patch(
    job: Mapping[str, Any],
    rjob: Mapping[str, Any] | None,
    *,
    resources: bool = False,
    execution_attempt: int | None = None,
) -> dict[str, Any]:
    """A merge patch resuming `job` with `rjob`'s pod-template fields merged in; with
    `resources`, the changed container resources too (`resource_patches`: then the patch
    must be sent as a strategic merge patch). With `execution_attempt`, the Job and its pod
    template get that execution-attempt annotation in the same request that clears
    `suspend`, so no pod of the resumed run starts with the previous run's value.

    It carries the Job's resourceVersion, so a Job changed since it was read is not
    overwritten with a merge computed from stale lists (409 Conflict, retried).
    """
    jspec = job.get("spec") or {}
    jtemplate = jspec.get("template") or {}
    jmeta = jtemplate.get("metadata") or {}
    jpod = jtemplate.get("spec") or {}
    patch: dict[str, Any] = {
        "metadata": {"resourceVersion": (job.get("metadata") or {}).get("resourceVersion")},
        "spec": {"suspend": False},
    }
    if rjob is not None:
        ptemplate = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
        pmeta = ptemplate.get("metadata") or {}
        ppod = ptemplate.get("spec") or {}
        patch["spec"]["template"] = {
            "metadata": {
                "labels": merge_maps(jmeta.get("labels"), pmeta.get("labels")),
                "annotations": merge_maps(jmeta.get("annotations"), pmeta.get("annotations")),
            },
            "spec": {
                "nodeSelector": merge_maps(jpod.get("nodeSelector"), ppod.get("nodeSelector")),
                "tolerations": merge_lists(jpod.get("tolerations"), ppod.get("tolerations")),
                "schedulingGates": merge_lists(
                    jpod.get("schedulingGates"), ppod.get("schedulingGates")
                ),
            },
        }
        if resources:
            patch["spec"]["template"]["spec"].update(resource_patches(job, rjob))
    if execution_attempt is not None:
        _stamp_attempt(patch, execution_attempt)
    if not patch["metadata"]["resourceVersion"]:
        del patch["metadata"]["resourceVersion"]
    if not patch["metadata"]:
        del patch["metadata"]
    return patch


def _stamp_attempt(patch: dict[str, Any], attempt: int) -> None:
    value = {c.EXECUTION_ATTEMPT_KEY: str(attempt)}
    patch["metadata"]["annotations"] = value
    template = patch["spec"].setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    tmeta["annotations"] = {**(tmeta.get("annotations") or {}), **value}
