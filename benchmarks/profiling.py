"""Where a benchmarked process spends its CPU: py-spy attached for a span, summarised.

py-spy samples a running Python process from outside (no change to the process, a few
per cent of one core at 100 samples/s). Its raw output is one line per distinct stack,
`frame;frame;...;frame COUNT`, outermost first. The summary answers "which part of the
program": every sample is charged to the outermost frame from one of the given packages
(for the simulator: its API server, Job controller, scheduler or kubelet - the component
whose task was running: the first such frame after the event loop's `Handle._run`), and
the hottest innermost frames are listed beside.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+)(?::\d+)?\)$")


# Frames that only run another component's code (the simulator's shared controller loop,
# the entry point): a sample is charged to the component they call.
GENERIC = ("kubesim/base/controller.py", "kubeutil/aio.py", "jobset/cli.py")


@dataclass
class Spy:
    """One py-spy process recording one pid into a raw file."""

    name: str
    proc: subprocess.Popen[bytes]
    out: Path


def executable() -> str | None:
    """py-spy beside this interpreter (the bench extra installs it into the venv), else on
    PATH."""
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def available() -> bool:
    return executable() is not None


def start(name: str, pid: int, out: Path, rate: int = 50) -> Spy:
    exe = executable()
    if exe is None:
        raise FileNotFoundError("py-spy is not installed (pip install py-spy)")
    cmd = [exe, "record", "--pid", str(pid), "--format", "raw", "--rate", str(rate)]
    cmd += ["--output", str(out), "--nonblocking"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Spy(name, proc, out)


def stop(spy: Spy, timeout: float = 60) -> None:
    """Ends the recording (py-spy writes its file on SIGINT)."""
    if spy.proc.poll() is None:
        spy.proc.send_signal(signal.SIGINT)
        try:
            spy.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            spy.proc.kill()
            spy.proc.wait()


def _component(file: str, depth: int) -> str:
    parts = file.removesuffix(".py").split("/")
    return "/".join(parts[:depth])


def _relative(file: str, packages: tuple[str, ...]) -> str | None:
    """`file` from its package on (py-spy prints site-packages paths shortened, others in
    full), or None when it is in none of `packages`."""
    for p in packages:
        i = file.find(f"{p}/")
        if i == 0 or (i > 0 and file[i - 1] == "/"):
            return file[i:]
    return None


def summarise(
    text: str, packages: tuple[str, ...], top: int = 12, parts: Any = None
) -> dict[str, Any]:
    """Samples per component (the running task's outermost frame from `packages`, its path
    to two parts or three under `controllers`,
    e.g. `kubesim/kubelet`, `kubesim/controllers/job`) and per hottest innermost frame; with
    `parts` (frames -> name, e.g. `sim_parts.part_of`) also per part."""
    by_part: Counter[str] = Counter()
    by_component: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        if parts is not None:
            by_part[parts(stack.split(";"))] += count
        frames = [m for f in stack.split(";") if (m := _FRAME.match(f.strip()))]
        # The task that was running: what follows the event loop's last callback frame.
        runs = [i for i, m in enumerate(frames) if m["func"] == "Handle._run"]
        task = frames[runs[-1] + 1 :] if runs else frames
        owner = "other (event loop, aiohttp, ssl, idle)"
        for m in task:
            rel = _relative(m["file"], packages)
            if rel is not None and not rel.startswith(GENERIC):
                depth = 3 if "/controllers/" in rel else 2
                owner = _component(rel, depth)
                break
        by_component[owner] += count
        if frames:
            leaf = frames[-1]
            where = _relative(leaf["file"], packages) or leaf["file"].rsplit("/", 1)[-1]
            by_leaf[f"{leaf['func']} ({where})"] += count
    share = {k: round(v / total, 3) for k, v in by_component.most_common()} if total else {}
    hot = {k: round(v / total, 3) for k, v in by_leaf.most_common(top)} if total else {}
    out = {"samples": total, "by_component": share, "hottest_frames": hot}
    if parts is not None and total:
        out["by_part"] = {k: round(v / total, 3) for k, v in by_part.most_common()}
    return out


def summarise_file(path: Path, packages: tuple[str, ...], parts: Any = None) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        return {"error": f"no profile: {exc}"}
    return summarise(text, packages, parts=parts)
