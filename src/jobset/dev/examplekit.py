"""The manifests in `examples/`: their header, their expected outcome, and checking it.

Each example starts with a comment block. Besides free text for people, it holds lines
for machines (one per key, `# key: value`):

``# expect: STATE [CHECK ...]``
    the end state the JobSet reaches by itself. STATE is one of
    ``Completed``, ``Failed`` (``status.terminalState``), ``Suspended`` (condition
    Suspended=True and every child Job suspended) or ``deleted`` (the JobSet is gone).
    CHECKs, all of which must hold too:

    ``reason=R``          reason of the Completed / Failed / Suspended condition
    ``restarts=N``        ``status.restarts``
    ``job-restarts=N``    per-Job restarts (RestartJob), summed over
                          ``status.replicatedJobsStatus[].jobRestarts``
    ``in-place-attempt=N`` ``status.currentInPlaceRestartAttempt`` (InPlaceRestart)
    ``jobs=N``            number of child Jobs left
    ``condition=TYPE``    that condition is True as well (repeatable)
    ``service=NAME``      a headless Service NAME with publishNotReadyAddresses
    ``exclusive=LABEL``   every child Job's pods ran on nodes sharing one value of the node
                          label LABEL, and no two Jobs share a value
    ``present=KIND/NAME`` that object exists (repeatable), e.g. ``present=pvc/data-train``
    ``absent=KIND/NAME``  that object does not exist (repeatable)
    ``log=REGEX``         the logs of the JobSet's pods that exist at the end (every
                          container) match the Python regular expression REGEX
                          (repeatable; no spaces in it)

``# then-run: kubectl ARGS``
    optional: a follow-up step (shell quoting), run once ``expect`` holds, e.g. resuming
    a suspended JobSet; the namespace flag is appended by whoever runs it.
``# then-expect: STATE [CHECK ...]``
    what holds after ``then-run``.
``# jobset-dev-flags: FLAGS``
    flags `jobset dev` needs for this example (feature gates, nodes); shell quoting.
    ``$JOBSET_BIN`` stands for the directory of this installation's `jobset` command
    (for ``--run-image``: containers of that image run it as real processes), and
    ``$TRAIN_BIN`` for the ``bin`` directory of a virtual environment holding the training
    examples' requirements (`train_bin`).

Indented header lines starting with a command (`#   kubectl get jobsets`, continued by a
trailing backslash) are the commands the example tells people to run
(`comment_commands`); the example tests run every one of them against `jobset dev`.

An example is a file `examples/<name>.yaml`, or a directory `examples/<name>/` whose
`jobset.yaml` carries the header; a directory with a `kustomization.yaml` is applied with
``kubectl apply -k`` (its ConfigMaps generated from the files beside it).

`start_dev` starts `jobset dev` as a child process (as `kubesim.process.start_sim` does
for `jobset sim`); `observe` reads what the checks need with kubectl; `unmet` compares.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from jobset.data import EXAMPLES_DIR
from kubesim.process import SimProcess, start_command

__all__ = [
    "EXAMPLES_DIR",
    "STATES",
    "Example",
    "Expectation",
    "JobPlacement",
    "Observed",
    "comment_commands",
    "job_placements",
    "jobset_bin",
    "load_example",
    "load_examples",
    "observe",
    "observed_from",
    "parse_expectation",
    "pod_logs",
    "start_dev",
    "train_bin",
    "unmet",
]

STATES: Final = ("Completed", "Failed", "Suspended", "deleted")
EXAMPLE_FILE: Final = "jobset.yaml"  # the manifest of a directory example
KUSTOMIZATION: Final = "kustomization.yaml"
# The programs a comment line names when it is a command to run (`comment_commands`).
COMMAND_WORDS: Final = frozenset(
    {"kubectl", "jobset", "make", "export", "python", "python3", "pip", "docker", "helm", "curl"}
)
_COMMAND_LINE: Final = re.compile(r"#\s{2,}(\S+)")
TRAIN_VENV: Final = ".venv-train"
SERVER_SIDE_APPLY_BYTES: Final = 200_000  # client-side apply keeps a copy in an annotation

_KINDS: Final = {
    "pvc": "persistentvolumeclaims",
    "persistentvolumeclaim": "persistentvolumeclaims",
    "persistentvolumeclaims": "persistentvolumeclaims",
    "service": "services",
    "svc": "services",
    "services": "services",
    "job": "jobs",
    "jobs": "jobs",
    "configmap": "configmaps",
    "cm": "configmaps",
    "configmaps": "configmaps",
}


@dataclass(frozen=True)
class Expectation:
    state: str
    reason: str | None = None
    restarts: int | None = None
    job_restarts: int | None = None
    in_place_attempt: int | None = None
    jobs: int | None = None
    conditions: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    exclusive: str | None = None
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()

    def __str__(self) -> str:
        parts = [self.state]
        for key, value in (
            ("reason", self.reason),
            ("restarts", self.restarts),
            ("job-restarts", self.job_restarts),
            ("in-place-attempt", self.in_place_attempt),
            ("jobs", self.jobs),
            ("exclusive", self.exclusive),
        ):
            if value is not None:
                parts.append(f"{key}={value}")
        parts += [f"condition={v}" for v in self.conditions]
        parts += [f"service={v}" for v in self.services]
        parts += [f"present={v}" for v in self.present]
        parts += [f"absent={v}" for v in self.absent]
        parts += [f"log={v}" for v in self.logs]
        return " ".join(parts)


def parse_expectation(text: str) -> Expectation:
    """`Completed restarts=1 condition=X` -> Expectation; ValueError on anything unknown."""
    words = text.split()
    if not words or words[0] not in STATES:
        raise ValueError(f"expectation must start with one of {', '.join(STATES)}: {text!r}")
    fields: dict[str, Any] = {}
    lists: dict[str, list[str]] = {
        "conditions": [],
        "services": [],
        "present": [],
        "absent": [],
        "logs": [],
    }
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or not value:
            raise ValueError(f"expected KEY=VALUE, got {word!r} in {text!r}")
        if key in ("restarts", "job-restarts", "in-place-attempt", "jobs"):
            if not value.isdigit():
                raise ValueError(f"{key} needs a number, got {value!r}")
            fields[key.replace("-", "_")] = int(value)
        elif key in ("reason", "exclusive"):
            fields[key] = value
        elif key in ("condition", "service"):
            lists[key + "s"].append(value)
        elif key in ("present", "absent"):
            kind, slash, name = value.partition("/")
            if not slash or not name or kind.lower() not in _KINDS:
                raise ValueError(f"{key} needs KIND/NAME with KIND in {sorted(_KINDS)}: {value!r}")
            lists[key].append(f"{kind.lower()}/{name}")
        elif key == "log":
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"log needs a regular expression, {value!r}: {exc}") from None
            lists["logs"].append(value)
        else:
            raise ValueError(f"unknown check {key!r} in {text!r}")
    return Expectation(
        state=words[0],
        reason=fields.get("reason"),
        restarts=fields.get("restarts"),
        job_restarts=fields.get("job_restarts"),
        in_place_attempt=fields.get("in_place_attempt"),
        jobs=fields.get("jobs"),
        exclusive=fields.get("exclusive"),
        conditions=tuple(lists["conditions"]),
        services=tuple(lists["services"]),
        present=tuple(lists["present"]),
        absent=tuple(lists["absent"]),
        logs=tuple(lists["logs"]),
    )


@dataclass(frozen=True)
class Example:
    path: Path
    name: str  # metadata.name of the JobSet
    title: str  # the first header line
    expect: Expectation
    dev_flags: tuple[str, ...] = ()
    then_run: tuple[str, ...] = ()  # kubectl arguments
    then_expect: Expectation | None = None
    commands: tuple[str, ...] = ()  # the header's commands (`comment_commands`)

    @property
    def manifest(self) -> str:
        return self.path.read_text()

    @property
    def key(self) -> str:
        """The example's name in examples/: the file's stem, or its directory's name."""
        return self.path.parent.name if self.path.name == EXAMPLE_FILE else self.path.stem

    @property
    def shown(self) -> str:
        """How a user names it: `examples/simple.yaml`, `examples/jax-train`."""
        return f"examples/{self.key}" if self.kustomized else f"examples/{self.path.name}"

    @property
    def kustomized(self) -> bool:
        return self.path.name == EXAMPLE_FILE and (self.path.parent / KUSTOMIZATION).exists()

    def apply_args(self) -> list[str]:
        """`kubectl` arguments applying this example (server-side when it is large)."""
        if self.kustomized:
            return ["apply", "-k", str(self.path.parent)]
        args = ["apply", "-f", str(self.path)]
        if self.path.stat().st_size > SERVER_SIDE_APPLY_BYTES:
            args.insert(1, "--server-side")
        return args


def comment_commands(text: str) -> list[str]:
    """The commands in the leading comment block of `text`: lines indented by at least two
    spaces after `#` whose first word is in `COMMAND_WORDS`, with lines ending in a
    backslash joined to the next, as a shell reads them."""
    out: list[str] = []
    pending: str | None = None
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if pending is not None:
            pending += " " + line[1:].strip()
        else:
            found = _COMMAND_LINE.match(line)
            if found is None or found.group(1) not in COMMAND_WORDS:
                continue
            pending = line[1:].strip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        out.append(pending)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def jobset_bin() -> str:
    """The directory of this installation's `jobset` console script."""
    return sysconfig.get_path("scripts")


def train_bin() -> str:
    """The `bin` of the virtual environment that runs the training examples' containers:
    `$JOBSET_TRAIN_BIN`, else `.venv-train/bin` beside this environment (in a checkout,
    where `make train-venv` creates it next to `.venv`)."""
    return os.environ.get("JOBSET_TRAIN_BIN") or str(Path(sys.prefix).parent / TRAIN_VENV / "bin")


def _flags(text: str) -> tuple[str, ...]:
    subst = {"$JOBSET_BIN": jobset_bin, "$TRAIN_BIN": train_bin}
    out = []
    for flag in shlex.split(text):
        for var, value in subst.items():
            if var in flag:
                flag = flag.replace(var, value())
        out.append(flag)
    return tuple(out)


def load_example(path: Path) -> Example:
    text = path.read_text()
    header: dict[str, str] = {}
    title = ""
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        if not title and body:
            title = body
        key, sep, value = body.partition(":")
        if sep and key in ("expect", "then-run", "then-expect", "jobset-dev-flags"):
            if key in header:
                raise ValueError(f"{path.name}: '# {key}:' given twice")
            header[key] = value.strip()
    if "expect" not in header:
        raise ValueError(f"{path.name}: the header has no '# expect:' line")
    docs = [d for d in yaml.safe_load_all(text) if d]
    jobsets = [d for d in docs if d.get("kind") == "JobSet"]
    if len(jobsets) != 1:
        raise ValueError(f"{path.name}: expected exactly one JobSet, found {len(jobsets)}")
    then_run: tuple[str, ...] = ()
    if "then-run" in header:
        argv = shlex.split(header["then-run"])
        if not argv or argv[0] != "kubectl":
            raise ValueError(f"{path.name}: then-run must be a kubectl command")
        then_run = tuple(argv[1:])
    if bool(then_run) != ("then-expect" in header):
        raise ValueError(f"{path.name}: then-run and then-expect go together")
    return Example(
        path=path,
        name=str(jobsets[0]["metadata"]["name"]),
        title=title,
        expect=parse_expectation(header["expect"]),
        dev_flags=_flags(header.get("jobset-dev-flags", "")),
        then_run=then_run,
        then_expect=parse_expectation(header["then-expect"]) if "then-expect" in header else None,
        commands=tuple(comment_commands(text)),
    )


def load_examples(directory: Path = EXAMPLES_DIR) -> list[Example]:
    """Every example: `*.yaml` and `*/jobset.yaml` (a directory example)."""
    paths = sorted(directory.glob("*.yaml")) + sorted(directory.glob(f"*/{EXAMPLE_FILE}"))
    return [load_example(p) for p in paths]


# ---------------------------------------------------------------------------------------------
# Observing and checking


@dataclass
class Observed:
    """What the checks look at: the JobSet (None: not found) and objects of its namespace."""

    jobset: dict[str, Any] | None
    jobs: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    objects: dict[str, set[str]] = field(default_factory=dict)  # resource -> names
    logs: str = ""  # the JobSet's pods' logs, when a check reads them


Kubectl = Callable[..., str]  # kubectl(*args) -> stdout; raises on failure


def observe(kubectl: Kubectl, namespace: str, name: str, expect: Expectation) -> Observed:
    """Read, with kubectl, everything `expect` needs to be checked."""
    raw = kubectl(
        "get", "jobsets.jobset.x-k8s.io", name, "-n", namespace, "-o", "json", "--ignore-not-found"
    )
    resources = {"jobs"}
    if expect.exclusive:
        resources.add("pods")
    if expect.services:
        resources.add("services")
    for ref in (*expect.present, *expect.absent):
        resources.add(_KINDS[ref.split("/", 1)[0]])
    items = json.loads(kubectl("get", ",".join(sorted(resources)), "-n", namespace, "-o", "json"))
    nodes: list[dict[str, Any]] = []
    if expect.exclusive:
        nodes = json.loads(kubectl("get", "nodes", "-o", "json")).get("items") or []
    jobset = json.loads(raw) if raw.strip() else None
    seen = observed_from(name, jobset, items.get("items") or [], nodes)
    if expect.logs:
        seen.logs = pod_logs(kubectl, namespace, name)
    return seen


def pod_logs(kubectl: Kubectl, namespace: str, name: str) -> str:
    """The logs of every container of JobSet `name`'s pods (those that exist now)."""
    return kubectl(
        "logs",
        "-n",
        namespace,
        "-l",
        f"jobset.sigs.k8s.io/jobset-name={name}",
        "--all-containers",
        "--prefix",
        "--tail=-1",
        "--max-log-requests=50",
    )


def observed_from(
    name: str,
    jobset: dict[str, Any] | None,
    items: Sequence[dict[str, Any]],
    nodes: Sequence[dict[str, Any]] = (),
) -> Observed:
    """An `Observed` for JobSet `name` out of listed objects of its namespace (Jobs, Pods,
    Services, PVCs, ... in any mix) and the Nodes."""
    out = Observed(jobset, nodes=list(nodes))
    headless: set[str] = set()
    for item in items:
        kind = str(item.get("kind"))
        meta = item.get("metadata") or {}
        if kind == "Job":
            if (meta.get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") == name:
                out.jobs.append(item)
        elif kind == "Pod":
            out.pods.append(item)
        elif kind == "Service":
            spec = item.get("spec") or {}
            if spec.get("clusterIP") == "None" and spec.get("publishNotReadyAddresses") is True:
                headless.add(str(meta.get("name")))
        plural = _KINDS.get(kind.lower())
        if plural:
            out.objects.setdefault(plural, set()).add(str(meta.get("name")))
    out.objects["services/headless"] = headless
    return out


def _condition(js: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype and cond.get("status") == "True":
            return dict(cond)
    return None


def unmet(expect: Expectation, seen: Observed) -> list[str]:
    """The parts of `expect` that do not hold in `seen` (empty: all hold)."""
    problems: list[str] = []
    js = seen.jobset
    if expect.state == "deleted":
        if js is not None:
            problems.append("the JobSet still exists")
    elif js is None:
        problems.append("the JobSet does not exist")
    else:
        status = js.get("status") or {}
        state_cond = {"Completed": "Completed", "Failed": "Failed", "Suspended": "Suspended"}
        cond = _condition(js, state_cond[expect.state])
        if expect.state in ("Completed", "Failed"):
            if status.get("terminalState") != expect.state:
                problems.append(f"terminalState is {status.get('terminalState')!r}")
        elif cond is None:
            problems.append("condition Suspended is not True")
        else:
            running = [j["metadata"]["name"] for j in seen.jobs if not j["spec"].get("suspend")]
            if running:
                problems.append(f"Jobs not suspended: {', '.join(sorted(running))}")
        if expect.reason is not None and (cond or {}).get("reason") != expect.reason:
            problems.append(
                f"{expect.state} reason is {(cond or {}).get('reason')!r}, want {expect.reason!r}"
            )
        if expect.restarts is not None and int(status.get("restarts") or 0) != expect.restarts:
            problems.append(f"restarts is {int(status.get('restarts') or 0)}")
        if expect.job_restarts is not None:
            total = sum(
                sum(int(n) for n in rj.get("jobRestarts") or [])
                for rj in status.get("replicatedJobsStatus") or []
            )
            if total != expect.job_restarts:
                problems.append(f"job restarts add up to {total}")
        if expect.in_place_attempt is not None:
            attempt = status.get("currentInPlaceRestartAttempt")
            if attempt != expect.in_place_attempt:
                problems.append(f"currentInPlaceRestartAttempt is {attempt!r}")
        for ctype in expect.conditions:
            if _condition(js, ctype) is None:
                problems.append(f"condition {ctype} is not True")
    if expect.jobs is not None and len(seen.jobs) != expect.jobs:
        problems.append(f"{len(seen.jobs)} child Jobs, want {expect.jobs}")
    for svc in expect.services:
        if svc not in seen.objects.get("services/headless", set()):
            problems.append(f"no headless Service {svc} publishing not-ready addresses")
    for ref in expect.present:
        kind, name = ref.split("/", 1)
        if name not in seen.objects.get(_KINDS[kind], set()):
            problems.append(f"{ref} does not exist")
    for ref in expect.absent:
        kind, name = ref.split("/", 1)
        if name in seen.objects.get(_KINDS[kind], set()):
            problems.append(f"{ref} still exists")
    for pattern in expect.logs:
        if not re.search(pattern, seen.logs):
            problems.append(f"no pod's log matches {pattern!r}")
    if expect.exclusive:
        problems += _exclusive_problems(expect.exclusive, seen)
    return problems


def _pod_interval(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(start, end) of a pod that ran, as RFC 3339 strings (which sort as times); a pod
    still running ends at "~" (after any time)."""
    status = pod.get("status") or {}
    start = status.get("startTime")
    if not start:
        return None
    ends = [
        str(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt") or "")
        for cs in status.get("containerStatuses") or []
    ]
    if status.get("phase") in ("Succeeded", "Failed") and all(ends):
        return str(start), max(ends, default=str(start))
    return str(start), "~"


@dataclass
class JobPlacement:
    """Where a Job's pods ran: the values of the topology label, and when."""

    domains: set[str] = field(default_factory=set)
    start: str = "~"
    end: str = ""


def job_placements(
    label: str,
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> dict[str, JobPlacement]:
    """Job name -> the values of node label `label` its scheduled pods are on, and the
    time span they ran in."""
    node_value = {
        str(n["metadata"]["name"]): str(((n["metadata"].get("labels") or {}).get(label)) or "?")
        for n in nodes
    }
    uids = {str(j["metadata"].get("uid")): str(j["metadata"]["name"]) for j in jobs}
    out = {name: JobPlacement() for name in uids.values()}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        owner = next(
            (o for o in pod["metadata"].get("ownerReferences") or [] if o.get("controller")),
            None,
        )
        if not node or owner is None or str(owner.get("uid")) not in uids:
            continue
        placement = out[uids[str(owner["uid"])]]
        placement.domains.add(node_value.get(str(node), "?"))
        span = _pod_interval(pod)
        if span is not None:
            placement.start = min(placement.start, span[0])
            placement.end = max(placement.end, span[1])
    return out


def _exclusive_problems(label: str, seen: Observed) -> list[str]:
    """Each Job in one domain; two Jobs in the same domain only one after the other (a
    domain freed by a finished Job may take the next one, as in Kubernetes)."""
    placements = sorted(job_placements(label, seen.jobs, seen.pods, seen.nodes).items())
    problems: list[str] = []
    for job, where in placements:
        if not where.domains:
            problems.append(f"no scheduled pods of Job {job} to check")
        elif len(where.domains) > 1:
            problems.append(f"Job {job} spans {label} values {sorted(where.domains)}")
    for i, (job_a, a) in enumerate(placements):
        for job_b, b in placements[i + 1 :]:
            shared = a.domains & b.domains
            if shared and a.start < b.end and b.start < a.end:
                problems.append(
                    f"Jobs {job_a} and {job_b} ran at the same time in {label}="
                    f"{','.join(sorted(shared))}"
                )
    return problems


# ---------------------------------------------------------------------------------------------
# `jobset dev` as a child process


def start_dev(tmp: Path, *extra: str, timeout: float = 60) -> SimProcess:
    """Start `jobset dev --kubeconfig tmp/kubeconfig EXTRA...` and wait for its `ready` line.
    Quiet unless told otherwise (`--log-level WARNING` unless EXTRA sets one)."""
    quiet = () if "--log-level" in extra else ("--log-level", "WARNING")
    return start_command(tmp, "dev", *quiet, *extra, timeout=timeout)
