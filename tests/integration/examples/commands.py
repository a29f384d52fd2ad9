"""Running the commands an example's comments name, as a reader would, against `jobset dev`.

`check_commands` takes an example's `commands` (`jobset.dev.examplekit.comment_commands`)
and a cluster, and returns what did not work (empty: all did). Each kind of line is checked
the way it can be here:

- `jobset dev ... &`: the cluster is the test's own, started with the example's flags; the
  line is expanded by bash and parsed by the real `jobset` parser, and must carry every
  flag the example's `# jobset-dev-flags:` asks for;
- `export KUBECONFIG=PATH`: PATH must be the `--kubeconfig` of that `jobset dev` line;
- `make TARGET`: `make -n TARGET` (a dry run: the target exists and its prerequisites
  resolve, nothing is built);
- `kubectl apply -f|-k PATH`: it must be what the fixture ran to create the example (its
  own file or directory, from the repository's root); applying it a second time over the
  created JobSet is refused, as upstream's (`spec.replicatedJobs: field is immutable`:
  the defaulting webhook runs on create only), so it is not run again;
- the example's `# then-run:` command: the test ran it before (and checked what follows);
- anything else (kubectl, `jobset watch`, pipelines into grep): run by bash from the
  repository's root, with `KUBECONFIG` a copy of the cluster's whose context namespace is
  the example's, and `jobset` on PATH. A command that watches (`-w`, `--watch`, `-f`) must
  still be running without an error after `WATCH_SECONDS`, or have exited 0; any other
  must exit 0 within `RETRY_SECONDS` of tries (as a reader re-runs `kubectl logs` until
  the pod has started).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from jobset.dev.examplekit import Example

REPO: Final = Path(__file__).resolve().parents[3]
WATCH_SECONDS: Final = 3.0
RETRY_SECONDS: Final = 30.0
WATCH_FLAGS: Final = frozenset({"-w", "--watch", "-f", "--follow"})


def namespaced_kubeconfig(kubeconfig: Path, namespace: str, directory: Path) -> Path:
    """A copy of `kubeconfig` whose current context uses `namespace`."""
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{namespace}.kubeconfig"
    shutil.copyfile(kubeconfig, out)
    subprocess.run(
        ["kubectl", "config", "set-context", "--current", f"--namespace={namespace}"],
        env={**os.environ, "KUBECONFIG": str(out)},
        check=True,
        capture_output=True,
    )
    return out


def check_commands(example: Example, kubeconfig: Path) -> list[str]:
    """What does not work among `example.commands` (see the module docstring)."""
    problems: list[str] = []
    dev_kubeconfig: str | None = None
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for command in example.commands:
        words = shlex.split(command, comments=True)
        if words[:2] == ["jobset", "dev"]:
            dev_kubeconfig, problem = _check_dev_line(example, command)
        elif words[0] == "export":
            problem = _check_export(words, dev_kubeconfig)
        elif words[0] == "make":
            problem = _check_make(words)
        elif words[0] == "kubectl" and tuple(words[1:]) == example.then_run:
            problem = ""  # run by the test as the example's then-run step
        elif words[:2] == ["kubectl", "apply"]:
            problem = _check_apply(example, words)
        elif WATCH_FLAGS & set(words):
            problem = _run_watch(command, env)
        else:
            problem = _run(command, env)
        if problem:
            problems.append(f"`{command}`: {problem}")
    return problems


def _expand(command: str) -> list[str]:
    """`command`'s words as bash expands them (`$(...)`, quotes), without a trailing `&`."""
    body = command.rstrip().removesuffix("&").rstrip()
    out = subprocess.run(
        ["bash", "-c", f'for word in {body}; do printf "%s\\0" "$word"; done'],
        capture_output=True,
        text=True,
        check=True,
    )
    return [w for w in out.stdout.split("\0") if w]


def _check_dev_line(example: Example, command: str) -> tuple[str | None, str]:
    from jobset.cli import build_parser

    argv = _expand(command)
    try:
        args = build_parser().parse_args(argv[1:])
    except SystemExit:
        return None, f"`jobset` refuses these arguments: {argv[1:]}"
    wanted = {f for f in example.dev_flags if f.startswith("--")}
    missing = sorted(wanted - set(argv))
    if missing:
        return None, f"the example needs `jobset dev` {' '.join(missing)}"
    return str(getattr(args, "kubeconfig", "") or ""), ""


def _check_export(words: Sequence[str], dev_kubeconfig: str | None) -> str:
    name, _, value = words[1].partition("=")
    if name != "KUBECONFIG":
        return f"exports {name}, which the test does not know"
    if value != dev_kubeconfig:
        return f"KUBECONFIG={value} is not the `jobset dev --kubeconfig` ({dev_kubeconfig})"
    return ""


def _check_make(words: Sequence[str]) -> str:
    result = subprocess.run(
        ["make", "-n", *words[1:]], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    return "" if result.returncode == 0 else f"make -n: {result.stderr.strip()}"


def _check_apply(example: Example, words: Sequence[str]) -> str:
    applied = example.path.parent if example.kustomized else example.path
    flag = "-k" if example.kustomized else "-f"
    if list(words[2:]) != [flag, words[3] if len(words) > 3 else ""]:
        return f"the example is applied with `kubectl apply {flag} {example.shown}`"
    if (REPO / words[3]).resolve() != applied.resolve():
        return f"{words[3]} is not {example.shown}"
    return ""


def _run(command: str, env: dict[str, str]) -> str:
    deadline = time.monotonic() + RETRY_SECONDS
    first = ""
    while True:
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if result.returncode == 0:
            return ""
        said = f"exit {result.returncode}: {(result.stderr or result.stdout).strip()[-500:]}"
        first = first or said
        if time.monotonic() > deadline:
            return said if said == first else f"{said} (first try: {first})"
        time.sleep(1.0)


def _run_watch(command: str, env: dict[str, str]) -> str:
    with subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=WATCH_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)
            out, err = proc.communicate()
            if err.strip():
                return f"while watching: {err.strip()[-500:]}"
            return "" if out.strip() else "printed nothing while watching"
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {(err or out).strip()[-500:]}"
    return ""
