"""The demo's record of what a JobSet's pods printed, kept after a restart deletes them.

A group restart deletes every pod of the failed attempt, and their logs with them: reading
logs at the end shows only the last attempt, never the failure that caused the restart.
`PodLogKeeper` starts `kubectl logs -f` for each pod once its containers have started (each
into a file of its own) and remembers the pod as last seen, so the failure, the restart and
the resumed run can all be told from the pods' own output afterwards (`story`, pure).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

__all__ = [
    "ATTEMPT_KEY",
    "JOBSET_KEY",
    "POD_INDEX_KEY",
    "PodLog",
    "PodLogKeeper",
    "failure_of",
    "story",
]

ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/restart-attempt"
JOBSET_KEY: Final = "jobset.sigs.k8s.io/jobset-name"
POD_INDEX_KEY: Final = "batch.kubernetes.io/job-completion-index"
FAILURE_LINES: Final = 2  # lines shown of a failed container's end
MAX_LINE: Final = 160  # longer log lines are cut (a traceback's frames, a JSON record)
# Stack frames (native `@ 0x...`, Python's `File "..."` and its source line, Java's `at`):
# not what a reader looks for in a pod's last words.
_FRAME: Final = re.compile(r"^\s*(@\s+0x|File \"|at\s)|^\s{4,}\S")


@dataclass
class PodLog:
    """One pod's output and what was last seen of it."""

    name: str
    jobset: str
    attempt: int  # its restart attempt
    index: str  # its completion index ("" when not an indexed Job's pod)
    failure: str = ""  # "exit code 1" when a container was seen failed
    text: str = ""


def failure_of(pod: Mapping[str, Any]) -> str:
    """How the pod failed, as last seen ("" when no container was seen failing)."""
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or ():
        term = (cs.get("state") or {}).get("terminated") or {}
        code = term.get("exitCode")
        if isinstance(code, int) and code != 0:
            return f"container {cs.get('name')} exited with code {code}"
    return "failed" if status.get("phase") == "Failed" else ""


def _started(pod: Mapping[str, Any]) -> bool:
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        state = cs.get("state") or {}
        if "running" in state or "terminated" in state:
            return True
    return False


class PodLogKeeper:
    """Follows the logs of the pods of the JobSets `names` in `namespace` into `directory`."""

    def __init__(
        self, kubeconfig: Path, namespace: str, names: Sequence[str], directory: Path
    ) -> None:
        self._env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self._namespace = namespace
        self._names = frozenset(names)
        self._directory = directory
        self._followers: dict[str, tuple[subprocess.Popen[bytes], IO[bytes]]] = {}
        self._pods: dict[str, PodLog] = {}

    def update(self, pods: Sequence[Mapping[str, Any]]) -> None:
        """Note the pods as seen now; follow those that started and are not followed."""
        for pod in pods:
            meta = pod.get("metadata") or {}
            labels = meta.get("labels") or {}
            if labels.get(JOBSET_KEY) not in self._names:
                continue
            name = str(meta.get("name"))
            log = self._pods.get(name)
            if log is None:
                attempt = str(labels.get(ATTEMPT_KEY) or "0")
                index = str(labels.get(POD_INDEX_KEY) or "")
                number = int(attempt) if attempt.isdigit() else 0
                jobset = str(labels.get(JOBSET_KEY))
                log = self._pods[name] = PodLog(name, jobset, number, index)
            log.failure = failure_of(pod) or log.failure
            if name not in self._followers and _started(pod):
                self._follow(name)

    def _follow(self, name: str) -> None:
        self._directory.mkdir(parents=True, exist_ok=True)
        sink = (self._directory / f"{name}.log").open("wb")
        args = ["kubectl", "logs", "-f", name, "-n", self._namespace, "--all-containers"]
        proc = subprocess.Popen(
            args, stdout=sink, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=self._env
        )
        self._followers[name] = (proc, sink)

    def stop(self, grace: float = 5.0) -> list[PodLog]:
        """End the followers (those of pods still running are cut) and return every pod's
        log, in the order of attempts, then pod indexes."""
        for proc, _sink in self._followers.values():
            if proc.poll() is None:
                proc.terminate()
        for name, (proc, sink) in self._followers.items():
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            sink.close()
            self._pods[name].text = (self._directory / f"{name}.log").read_text(errors="replace")
        self._followers.clear()
        return sorted(self._pods.values(), key=lambda p: (p.attempt, p.index, p.name))


# Control characters a pod may print (escape sequences that move the cursor, clear the
# screen or retitle the terminal): shown escaped, never sent to the demo's terminal.
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(line: str) -> str:
    """A log line as the demo prints it: control characters escaped, at most `MAX_LINE`."""
    line = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line.expandtabs(4))
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def story(logs: Sequence[PodLog], patterns: Sequence[str]) -> list[str]:
    """The lines that tell a run: per restart attempt, each pod's lines matching `patterns`
    and, for a pod that failed or that a restart ended, its last lines."""
    compiled = [re.compile(p) for p in patterns]
    last_attempt = max((p.attempt for p in logs), default=0)
    out: list[str] = []
    attempt = -1
    for log in logs:
        if log.attempt != attempt:
            attempt = log.attempt
            after = " (after a JobSet restart)" if attempt else ""
            out.append(f"  restart attempt {attempt}{after}:")
        # Lines end at "\n" only: a "\r" or a form feed inside one is the pod's to show.
        lines = [ln.rstrip("\r") for ln in log.text.split("\n") if ln.strip()]
        shown = [ln for ln in lines if any(c.search(ln) for c in compiled)]
        ended = log.failure or log.attempt < last_attempt
        if ended:
            words = [ln for ln in lines if not _FRAME.match(ln)]
            shown += [ln for ln in words[-FAILURE_LINES:] if ln not in shown]
        pod = f"pod {log.index}" if log.index else "pod"
        how = f", {log.failure}" if log.failure else ""
        out.append(f"    {log.name} ({pod}{how}):")
        out += [f"      {_shown(ln)}" for ln in shown] or ["      (nothing of note)"]
    return out
