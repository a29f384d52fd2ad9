"""`make demo`: a simulated cluster with the JobSet controller, three examples, live.

Starts `jobset dev` (with TPU node pools, as examples/tpu-multislice.yaml asks), submits

* examples/tpu-multislice.yaml - a JAX multislice job, one slice per node pool
  (exclusive placement),
* examples/failure-policy-ignore-max-restarts.yaml - a job that fails, restarts three
  times and recovers,
* examples/depends-on.yaml - a pipeline: initializer, then launcher, then workers,

and shows their progress in a table refreshed every second (phase, ready / succeeded /
failed Jobs per ReplicatedJob, restarts, the node pool each Job landed in), then each
one's final state against the outcome its header promises. For an example whose outcome
names log lines (`log=`), it follows every pod's log as the pods come and go
(`podlogs.py`) and prints what tells the run: the failure, each restart attempt, the lines
the outcome names (jax-train's `resumed-from-step=N`), from the pods' own output.

`python -m jobset.dev.demo NAME...` runs other examples instead (`make demo-train`: the
real JAX training run of examples/jax-train/), each NAME a file or directory in examples/.

Interactive (stdin and stdout are terminals) it keeps the cluster running until Ctrl-C
and says how to use it with kubectl. With `JOBSET_DEMO_EXIT=1`, or when stdin is not a
terminal (CI), it prints plain text, stops the cluster and exits: 0 when every example
reached its expected state.

Its files (the kubeconfig, the followed logs) go to a temporary directory removed when it
exits, or to `JOBSET_DEMO_DIR`, which is left as it is.

Environment: `JOBSET_DEMO_TIME_SCALE` (default 0.25: a simulated minute takes 15 s),
`JOBSET_DEMO_TIMEOUT` (seconds, default 300), `JOBSET_DEMO_DIR`, `JOBSET_DEMO_COMMAND` (how
the closing message names the command that ran the demo; the Makefile sets it).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from jobset.controllers.jobset_controller import jobset_phase
from jobset.dev.examplekit import (
    EXAMPLE_FILE,
    EXAMPLES_DIR,
    Example,
    job_placements,
    load_example,
    observed_from,
    pod_logs,
    start_dev,
    unmet,
)
from jobset.dev.podlogs import PodLog, PodLogKeeper, story
from kubesim.process import SimProcess

DEMO_EXAMPLES: Final = (
    "tpu-multislice.yaml",
    "failure-policy-ignore-max-restarts.yaml",
    "depends-on.yaml",
)
POOL_LABEL: Final = "cloud.google.com/gke-nodepool"
NAMESPACE: Final = "default"
SETTLE_SECONDS: Final = 10.0  # after a JobSet finished, time for the rest to follow
FIRST_PLACEMENT_WAIT: Final = 15.0  # seconds the multislice leaders get to claim pools

RJ_KEY: Final = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-index"
ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/restart-attempt"
JOBSET_KEY: Final = "jobset.sigs.k8s.io/jobset-name"


@dataclass
class Row:
    jobset: str
    phase: str
    restarts: str
    rjob: str
    ready: str
    succeeded: str
    failed: str
    placement: str


HEADERS: Final = Row(
    "JOBSET",
    "PHASE",
    "RESTARTS",
    "REPLICATEDJOB",
    "READY",
    "SUCCEEDED",
    "FAILED",
    "NODE POOL OF EACH JOB",
)


def _kubectl(
    kubeconfig: Path, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        ["kubectl", *args], input=input, capture_output=True, text=True, env=env, timeout=60
    )


def _pool_of_jobs(
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> dict[str, str]:
    """Job name -> the pool(s) its pods run on ("-": none scheduled yet)."""
    return {
        name: "+".join(sorted(p.domains)) or "-"
        for name, p in job_placements(POOL_LABEL, jobs, pods, nodes).items()
    }


def rows_for(
    js: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> list[Row]:
    """The table rows of one JobSet: one per ReplicatedJob."""
    status = js.get("status") or {}
    restarts = int(status.get("restarts") or 0)
    name = str(js["metadata"]["name"])
    current = [
        j
        for j in jobs
        if (j["metadata"].get("labels") or {}).get(JOBSET_KEY) == name
        and (j["metadata"].get("labels") or {}).get(ATTEMPT_KEY) == str(restarts)
    ]
    pools = _pool_of_jobs(current, pods, nodes)
    counts = {str(rj.get("name")): rj for rj in status.get("replicatedJobsStatus") or []}
    rows: list[Row] = []
    for i, rjob in enumerate((js.get("spec") or {}).get("replicatedJobs") or []):
        rname = str(rjob.get("name"))
        mine = sorted(
            (j for j in current if (j["metadata"].get("labels") or {}).get(RJ_KEY) == rname),
            key=lambda j: int((j["metadata"].get("labels") or {}).get(JOB_INDEX_KEY) or 0),
        )
        placement = " ".join(
            f"{(j['metadata'].get('labels') or {}).get(JOB_INDEX_KEY)}:"
            f"{pools.get(j['metadata']['name'], '-')}"
            for j in mine
        )
        rs = counts.get(rname) or {}
        rows.append(
            Row(
                jobset=name if i == 0 else "",
                phase=jobset_phase(js) if i == 0 else "",
                restarts=str(restarts) if i == 0 else "",
                rjob=rname,
                ready=str(int(rs.get("ready") or 0)),
                succeeded=str(int(rs.get("succeeded") or 0)),
                failed=str(int(rs.get("failed") or 0)),
                placement=placement or "-",
            )
        )
    return rows


def render_plain(rows: Sequence[Row]) -> str:
    table = [HEADERS, *rows]
    columns = list(zip(*(list(vars(r).values()) for r in table), strict=True))
    widths = [max(len(v) for v in col) for col in columns]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(vars(r).values(), widths, strict=True)).rstrip()
        for r in table
    ]
    return "\n".join(lines)


class Display:
    """Prints messages and the live table: redrawn in place on a terminal, printed when it
    changes (with the elapsed time) otherwise."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out = out
        self.live = live
        self._drawn = 0  # lines of the table on screen (live mode)
        self._last = ""
        self._start = time.monotonic()

    def message(self, text: str) -> None:
        self._erase()
        print(text, file=self.out, flush=True)
        if self.live and self._last:
            self._draw(self._last)

    def table(self, rows: Sequence[Row]) -> None:
        text = render_plain(rows)
        elapsed = f"[{time.monotonic() - self._start:5.1f}s]"
        if self.live:
            self._erase()
            self._draw(f"{elapsed}\n{text}")
            self._last = f"{elapsed}\n{text}"
        elif text != self._last:
            self._last = text
            print(f"{elapsed}\n{text}\n", file=self.out, flush=True)

    def done(self) -> None:
        self._drawn = 0
        self._last = ""

    def _draw(self, text: str) -> None:
        print(text, file=self.out, flush=True)
        width = max(1, shutil.get_terminal_size().columns)
        # lines the terminal shows, counting those it wraps, so the redraw lands exactly
        self._drawn = sum(max(1, -(-len(line) // width)) for line in text.split("\n"))

    def _erase(self) -> None:
        if self.live and self._drawn:
            self.out.write(f"\x1b[{self._drawn}F\x1b[J")
            self.out.flush()
            self._drawn = 0


@dataclass
class Snapshot:
    jobsets: dict[str, dict[str, Any]]
    items: list[dict[str, Any]]
    logs: dict[str, str] = field(default_factory=dict)  # JobSet -> its pods' logs, once ended

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [i for i in self.items if i.get("kind") == kind]


def snapshot(dev: SimProcess, log_jobsets: Sequence[str] = ()) -> Snapshot | None:
    """The demo namespace's JobSets and their objects; the pods' logs of the JobSets in
    `log_jobsets` that have ended (read once they are final, not every second)."""
    result = _kubectl(
        dev.kubeconfig,
        "get",
        "jobsets.jobset.x-k8s.io,jobs,pods,services,pvc",
        "-n",
        NAMESPACE,
        "-o",
        "json",
    )
    if result.returncode != 0:
        return None
    items = json.loads(result.stdout).get("items") or []
    jobsets = {str(i["metadata"]["name"]): i for i in items if i.get("kind") == "JobSet"}
    snap = Snapshot(jobsets, [i for i in items if i.get("kind") != "JobSet"])
    for name in log_jobsets:
        if (jobsets.get(name, {}).get("status") or {}).get("terminalState"):
            snap.logs[name] = pod_logs(_kubectl_out(dev.kubeconfig), NAMESPACE, name)
    return snap


def _kubectl_out(kubeconfig: Path) -> Callable[..., str]:
    def run(*args: str) -> str:
        result = _kubectl(kubeconfig, *args)
        return result.stdout if result.returncode == 0 else ""

    return run


def _leaders_placed(snap: Snapshot, name: str) -> bool:
    leaders = [
        p
        for p in snap.of_kind("Pod")
        if (p["metadata"].get("labels") or {}).get(JOBSET_KEY) == name
        and (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-completion-index")
        == "0"
    ]
    return bool(leaders) and all((p.get("spec") or {}).get("nodeName") for p in leaders)


def _load(names: Sequence[str]) -> list[Example]:
    """The examples named (a file, or a directory holding jobset.yaml, in examples/)."""
    paths = [EXAMPLES_DIR / name for name in names]
    return [load_example(p / EXAMPLE_FILE if p.is_dir() else p) for p in paths]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if shutil.which("kubectl") is None:
        print("kubectl is not on PATH; the demo needs it to talk to the cluster", file=sys.stderr)
        return 1
    try:
        examples = _load(args or list(DEMO_EXAMPLES))
    except (OSError, ValueError) as exc:
        print(f"cannot read the examples in {EXAMPLES_DIR}: {exc}", file=sys.stderr)
        return 1
    command = os.environ.get("JOBSET_DEMO_COMMAND") or shlex.join(
        ["python", "-m", "jobset.dev.demo", *args]
    )
    given = os.environ.get("JOBSET_DEMO_DIR")
    if given:
        Path(given).mkdir(parents=True, exist_ok=True)
        return _demo(examples, Path(given), command)
    with tempfile.TemporaryDirectory(prefix="jobset-demo-") as workdir:
        return _demo(examples, Path(workdir), command)


def _demo(examples: Sequence[Example], workdir: Path, command: str) -> int:
    """Run the demo with its files in `workdir`."""
    interactive = sys.stdin.isatty() and not os.environ.get("JOBSET_DEMO_EXIT")
    out = sys.stdout
    display = Display(out, live=out.isatty() and os.environ.get("TERM") != "dumb")
    time_scale = os.environ.get("JOBSET_DEMO_TIME_SCALE", "0.25")
    timeout = float(os.environ.get("JOBSET_DEMO_TIMEOUT", "300"))
    # The examples' own flags: the TPU node pools tpu-multislice.yaml asks for.
    flags = [*(f for e in examples for f in e.dev_flags), "--time-scale", time_scale]
    display.message(
        "Starting the simulated cluster and the JobSet controller:\n"
        f"  jobset dev {shlex.join(flags)}"
    )
    try:
        dev = start_dev(workdir, *flags)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    run = _Run(dev, examples, display, interactive, command)
    logged = [e.name for e in examples if e.expect.logs]
    keeper = PodLogKeeper(dev.kubeconfig, NAMESPACE, logged, workdir / "logs")
    try:
        return run(keeper, timeout)
    except KeyboardInterrupt:
        return 130
    finally:
        keeper.stop()
        dev.stop()


@dataclass
class _Run:
    """One demo run against a started cluster."""

    dev: SimProcess
    examples: Sequence[Example]
    display: Display
    interactive: bool
    command: str  # what ran the demo, for the closing message

    def __call__(self, keeper: PodLogKeeper, timeout: float) -> int:
        dev, examples, display = self.dev, self.examples, self.display
        nodes = _announce_cluster(dev, display)
        submit = _Submitter(dev.kubeconfig, display)
        if not submit(examples[0]):
            return 1
        snap, submitted_all = _watch(dev, examples, nodes, display, timeout, submit, keeper)
        if not submitted_all:
            return 1
        display.done()
        ok = _final_report(dev, examples, snap, nodes, display)
        _tell_logs(examples, keeper.stop(), display)
        return _finish(dev, examples, display, ok, self.command if not self.interactive else None)


def _announce_cluster(dev: SimProcess, display: Display) -> list[dict[str, Any]]:
    """Say the cluster is ready and what its nodes are; return the nodes."""
    display.message("  " + next(ln for ln in dev.output if "jobset dev ready" in ln).strip())
    nodes_out = _kubectl(dev.kubeconfig, "get", "nodes", "-o", "json")
    nodes: list[dict[str, Any]] = json.loads(nodes_out.stdout).get("items") or []
    pools = sorted({str((n["metadata"].get("labels") or {}).get(POOL_LABEL)) for n in nodes})
    tpus = {
        str((n.get("status") or {}).get("allocatable", {}).get("google.com/tpu")) for n in nodes
    }
    display.message(
        f"  {len(nodes)} nodes in {len(pools)} node pools ({', '.join(pools)}), "
        f"google.com/tpu per node: {', '.join(sorted(tpus))}\n"
    )
    return nodes


class _Submitter:
    """Applies examples with kubectl, showing the command; remembers when each went in."""

    def __init__(self, kubeconfig: Path, display: Display) -> None:
        self.kubeconfig = kubeconfig
        self.display = display
        self.submitted: dict[str, float] = {}

    def __call__(self, example: Example) -> bool:
        args = example.apply_args()
        result = _kubectl(self.kubeconfig, *args, "-n", NAMESPACE)
        what = example.title.split(" - ", 1)[-1]
        shown = f"kubectl {' '.join(args[:-1])} {example.shown}"
        if result.returncode != 0:
            self.display.message(f"{shown} failed: {result.stderr.strip()}")
            return False
        self.display.message(f"$ {shown}    # {what}")
        self.submitted[example.name] = time.monotonic()
        return True


def _watch(
    dev: SimProcess,
    examples: Sequence[Example],
    nodes: list[dict[str, Any]],
    display: Display,
    timeout: float,
    submit: _Submitter,
    keeper: PodLogKeeper,
) -> tuple[Snapshot | None, bool]:
    """Show the table every second, submitting the other examples once the first one's
    leaders are placed, until every example met its expectation (or settled) or `timeout`.
    Returns the last snapshot, and False when a submission failed."""
    first_at = time.monotonic()
    deadline = time.monotonic() + timeout
    snap: Snapshot | None = None
    finished_at: dict[str, float] = {}
    while time.monotonic() < deadline:
        tick = time.monotonic()
        snap = snapshot(dev, [e.name for e in examples if e.expect.logs]) or snap
        if snap is not None:
            keeper.update(snap.of_kind("Pod"))
            waiting = [e for e in examples if e.name not in submit.submitted]
            if waiting and (
                _leaders_placed(snap, examples[0].name)
                or time.monotonic() - first_at > FIRST_PLACEMENT_WAIT
            ):
                for example in waiting:
                    if not submit(example):
                        return snap, False
            display.table(_rows(snap, examples, nodes, finished_at))
            if len(submit.submitted) == len(examples) and all(
                _met(e, snap, nodes)
                or time.monotonic() - finished_at.get(e.name, time.monotonic()) > SETTLE_SECONDS
                for e in examples
            ):
                break
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    else:
        display.message(f"Timed out after {timeout:.0f}s (JOBSET_DEMO_TIMEOUT).")
    return snap, True


def _rows(
    snap: Snapshot,
    examples: Sequence[Example],
    nodes: list[dict[str, Any]],
    finished_at: dict[str, float],
) -> list[Row]:
    """The table's rows for the examples submitted so far; notes when each one finished."""
    rows: list[Row] = []
    for example in examples:
        js = snap.jobsets.get(example.name)
        if js is None:
            continue
        rows += rows_for(js, snap.of_kind("Job"), snap.of_kind("Pod"), nodes)
        if (js.get("status") or {}).get("terminalState"):
            finished_at.setdefault(example.name, time.monotonic())
    return rows


def _tell_logs(examples: Sequence[Example], logs: Sequence[PodLog], display: Display) -> None:
    """What the pods of the examples whose outcome names log lines printed, kept by the
    demo as the pods came and went (a restart deletes the failed attempt's pods)."""
    for example in examples:
        mine = [log for log in logs if log.jobset == example.name]
        if not example.expect.logs or not mine:
            continue
        display.message(
            f"\nWhat the pods of {example.name} printed (their logs, kept as the pods came "
            "and went):\n" + "\n".join(story(mine, example.expect.logs))
        )


def _finish(
    dev: SimProcess,
    examples: Sequence[Example],
    display: Display,
    ok: bool,
    command: str | None,
) -> int:
    """Interactive (`command` None): say how to use the cluster and keep it until Ctrl-C.
    Else say it stopped, and what keeps it (`command`, in a terminal)."""
    if command is None:
        display.message(_hints(dev, examples))
        display.message(
            "The cluster keeps running: use it from another terminal as above.\n"
            "Press Ctrl-C here to stop it."
        )
        try:
            dev.proc.wait()
        except KeyboardInterrupt:
            pass
        return 0
    display.message(
        "\nNot interactive: the cluster has been stopped "
        f"(run `{command}` in a terminal to keep it and use it with kubectl)."
    )
    return 0 if ok else 1


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it is below it (as `make demo` runs)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _met(example: Example, snap: Snapshot, nodes: Sequence[dict[str, Any]]) -> bool:
    return not _problems(example, snap, nodes)


def _problems(example: Example, snap: Snapshot, nodes: Sequence[dict[str, Any]]) -> list[str]:
    seen = observed_from(example.name, snap.jobsets.get(example.name), snap.items, nodes)
    seen.logs = snap.logs.get(example.name, "")
    return unmet(example.expect, seen)


def _final_report(
    dev: SimProcess,
    examples: Sequence[Example],
    snap: Snapshot | None,
    nodes: Sequence[dict[str, Any]],
    display: Display,
) -> bool:
    ok = True
    lines = ["", "Final states:"]
    for example in examples:
        js = (snap.jobsets.get(example.name) if snap else None) or {}
        status = js.get("status") or {}
        state = jobset_phase(js) if js else "not found"
        problems = _problems(example, snap, nodes) if snap else ["no data"]
        ok = ok and not problems
        verdict = "as expected" if not problems else "NOT as expected: " + "; ".join(problems)
        lines.append(
            f"  {example.name:<20} {state:<10} restarts={int(status.get('restarts') or 0)}"
            f"   expected: {example.expect}   -> {verdict}"
        )
    display.message("\n".join(lines))
    display.message("\n$ kubectl get jobsets")
    display.message(_kubectl(dev.kubeconfig, "get", "jobsets").stdout.rstrip())
    return ok


def _hints(dev: SimProcess, examples: Sequence[Example]) -> str:
    """What to try next with kubectl on the running cluster, for the examples that ran."""
    first = examples[0].name
    lines = [
        "\nPoke at the cluster with kubectl:",
        f"  export KUBECONFIG={dev.kubeconfig}",
        "  kubectl get jobsets",
        f"  kubectl get jobs,pods -o wide -l jobset.sigs.k8s.io/jobset-name={first}",
        f"  kubectl get nodes -L {POOL_LABEL}",
    ]
    if [e.path.name for e in examples] == list(DEMO_EXAMPLES):
        lines += [
            "  kubectl describe jobset ignore-max-restarts      # restarts and conditions",
            "  kubectl logs job/multislice-slice-0              # what the JAX processes printed",
        ]
    else:
        lines.append(f"  kubectl logs -l jobset.sigs.k8s.io/jobset-name={first} --prefix")
    lines.append(
        f"  kubectl apply -f {_shown(EXAMPLES_DIR / 'simple.yaml')}   # any file in examples/\n"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
