"""`jobset describe NAME`: spec summary, conditions as a timeline, Jobs, pods, what it is
waiting on (unschedulable pods, pod creation refused, a restart in progress), events."""

from __future__ import annotations

import argparse

from jobset.api import constants as c
from jobset.commands.common import EXIT_OK, Out, add_connection_flags, add_output_flag, connect
from jobset.commands.inspect import Snapshot, collect
from jobset.commands.summary import age, exclusive_topology_key, phase, progress
from jobset.commands.terminal import escape_terminal
from jobset.sdk.models import JobSet

__all__ = ["register", "render", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "describe",
        help="show a JobSet in detail",
        description="Show a JobSet: spec summary, status per ReplicatedJob, conditions as a "
        "timeline, child Jobs and their pods (node, topology domain), why it is not "
        "progressing (pods the scheduler cannot place, pods that cannot be created or "
        "started, a restart in progress), recent events.",
    )
    p.add_argument("name")
    add_connection_flags(p)
    add_output_flag(p)
    p.set_defaults(user_command=run)


def _kv(out: Out, key: str, value: object, indent: int = 0) -> None:
    out.line(escape_terminal(f"{' ' * indent}{key + ':':<20}{value}"))


def _map(values: dict[str, str] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or "<none>"


def _spec(out: Out, js: JobSet) -> None:
    spec = js.spec
    if spec is None:
        return
    out.line("Spec:")
    rows = []
    for rjob in spec.replicated_jobs or []:
        job_spec = rjob.template.spec if rjob.template else None
        pods = (job_spec.parallelism if job_spec else None) or 1
        deps = ", ".join(f"{d.name} ({d.status})" for d in rjob.depends_on or []) or "-"
        rows.append(
            [
                rjob.name or "",
                rjob.group_name or c.DEFAULT_GROUP_NAME,
                str(c.DEFAULT_REPLICAS if rjob.replicas is None else rjob.replicas),
                str(pods),
                deps,
                exclusive_topology_key(js, rjob.name) or "-",
            ]
        )
    out.table(
        ("REPLICATED JOB", "GROUP", "REPLICAS", "PODS/JOB", "DEPENDS ON", "EXCLUSIVE"), rows, 2
    )
    sp = spec.success_policy
    targets = ", ".join((sp.target_replicated_jobs if sp else None) or []) or "all"
    _kv(out, "Success policy", f"{(sp.operator if sp else None) or c.OPERATOR_ALL} of {targets}", 2)
    fp = spec.failure_policy
    if fp is None:
        _kv(out, "Failure policy", "none (fail on the first failed Job)", 2)
    else:
        rules = "; ".join(
            f"{r.name or '?'}: {r.action}"
            + (f" on {','.join(r.on_job_failure_reasons)}" if r.on_job_failure_reasons else "")
            for r in fp.rules or []
        )
        text = f"maxRestarts {fp.max_restarts or 0}, {fp.restart_strategy or 'Recreate'}"
        _kv(out, "Failure policy", text + (f", rules: {rules}" if rules else ""), 2)
    order = spec.startup_policy.startup_policy_order if spec.startup_policy else None
    _kv(out, "Startup policy", order or c.STARTUP_ANY_ORDER, 2)
    net = spec.network
    hostnames = net is None or net.enable_dns_hostnames is not False
    sub = (net.subdomain if net else None) or js.name
    _kv(out, "Network", f"subdomain {sub}, DNS hostnames {'on' if hostnames else 'off'}", 2)
    if spec.coordinator is not None:
        co = spec.coordinator
        endpoint = f"{js.name}-{co.replicated_job}-{co.job_index or 0}-{co.pod_index or 0}.{sub}"
        _kv(out, "Coordinator", endpoint, 2)
    _kv(out, "Suspend", "true" if spec.suspend else "false", 2)
    if spec.ttl_seconds_after_finished is not None:
        _kv(out, "TTL after finished", f"{spec.ttl_seconds_after_finished}s", 2)
    if spec.managed_by:
        _kv(out, "Managed by", spec.managed_by, 2)


def render(out: Out, snap: Snapshot) -> None:
    """`kubectl describe`'s layout: the header fields, the spec, then one section each."""
    _header(out, snap)
    _spec(out, snap.jobset)
    _section(out, "Status", _STATUS_COLUMNS, _status_rows(snap), always=True)
    _section(out, "Conditions", _CONDITION_COLUMNS, _condition_rows(snap))
    _section(out, "Jobs", _JOB_COLUMNS, _job_rows(snap))
    _section(out, "Pods", _POD_COLUMNS, _pod_rows(snap))
    if snap.blockers:
        out.line("Waiting on:")
        for b in snap.blockers:
            out.line(escape_terminal(f"  {b.text()}"))
    _section(out, "Events", _EVENT_COLUMNS, _event_rows(snap))


def _header(out: Out, snap: Snapshot) -> None:
    js = snap.jobset
    meta = js.metadata
    status = js.status
    _kv(out, "Name", js.name)
    _kv(out, "Namespace", js.namespace or "")
    _kv(out, "Phase", phase(js))
    restarts = (status.restarts if status else None) or 0
    counted = (status.restarts_count_towards_max if status else None) or 0
    _kv(out, "Restarts", f"{restarts} ({counted} counted towards maxRestarts)")
    created = meta.creation_timestamp if meta else None
    _kv(out, "Created", f"{created or '<unknown>'} ({age(created)} ago)")
    _kv(out, "Labels", _map(meta.labels if meta else None))
    _kv(out, "Annotations", _map(meta.annotations if meta else None))


def _section(
    out: Out, title: str, columns: tuple[str, ...], rows: list[list[str]], *, always: bool = False
) -> None:
    """A titled table, indented; `<none>` when empty unless the table is `always` shown."""
    out.line(f"{title}:")
    if rows or always:
        # Cells hold what others wrote (event and condition messages): no terminal controls.
        out.table(columns, [[escape_terminal(cell) for cell in row] for row in rows], 2)
    else:
        out.line("  <none>")


_STATUS_COLUMNS = (
    "REPLICATED JOB",
    "REPLICAS",
    "READY",
    "ACTIVE",
    "SUCCEEDED",
    "FAILED",
    "SUSPENDED",
)
_CONDITION_COLUMNS = ("TIME", "TYPE", "STATUS", "REASON", "MESSAGE")
_JOB_COLUMNS = ("JOB", "STATE", "ATTEMPT", "ACTIVE", "READY", "SUCCEEDED", "FAILED")
_POD_COLUMNS = ("POD", "JOB", "INDEX", "PHASE", "RESTARTS", "NODE", "DOMAIN")
_EVENT_COLUMNS = ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")


def _status_rows(snap: Snapshot) -> list[list[str]]:
    return [
        [p.name, str(p.replicas), str(p.ready), str(p.active), str(p.succeeded), str(p.failed),
         str(p.suspended)]
        for p in progress(snap.jobset)
    ]  # fmt: skip


def _condition_rows(snap: Snapshot) -> list[list[str]]:
    conds = sorted(snap.jobset.conditions, key=lambda cd: cd.last_transition_time or "")
    return [
        [cd.last_transition_time or "", cd.type or "", cd.status or "", cd.reason or "",
         cd.message or ""]
        for cd in conds
    ]  # fmt: skip


def _job_rows(snap: Snapshot) -> list[list[str]]:
    return [
        [j.name, j.state, j.attempt, str(j.active), str(j.ready), str(j.succeeded), str(j.failed)]
        for j in snap.jobs
    ]


def _pod_rows(snap: Snapshot) -> list[list[str]]:
    return [
        [p.name, j.name, p.index, p.phase, str(p.restarts), p.node or "<none>",
         p.domain or "<none>"]
        for j in snap.jobs
        for p in j.pods
    ]  # fmt: skip


def _event_rows(snap: Snapshot) -> list[list[str]]:
    return [[age(e.time), e.type, e.reason, e.object, e.message] for e in snap.events]


async def run(args: argparse.Namespace) -> int:
    out = Out()
    async with await connect(args, read_only=True) as sdk:
        snap = await collect(sdk, await sdk.get(args.name))
    if args.output:
        out.data(snap.to_dict(), args.output)
    else:
        render(out, snap)
    return EXIT_OK
