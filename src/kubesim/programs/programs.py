"""What a simulated container "does": how long it runs, how it exits, and what it prints.

The simulated kubelet never runs images. It reads the container's `command` + `args` and, where
they are plain enough, works out the outcome the real process would have had, so that upstream
examples behave as documented (index 0 fails after ten seconds, the others sleep, ...) without a
container runtime. Durations are in seconds *before* `--time-scale`.

What is understood:

* `sleep N` (`N`, `Ns`, `Nm`, `Nh`, `Nd`, fractions, several operands summed, `infinity`),
  `exit N`, `true`, `false`, `echo`, `printf`, `seq`, run directly or from a shell.
* Shell scripts given to `sh`/`bash`/`ash`/`dash`/`zsh`/`ksh` with `-c` (any flag bundle such as
  `-xc`, `-ec`, `-euo pipefail -c`), interpreted by a small shell: `;`, newlines, `&&`, `||`,
  `|`, `!`, `&` + `wait`, `if/elif/else/fi`, `for ... in`, `for ((...))`, `while`/`until`,
  `break`/`continue`, `{ }`, `( )`, `[ ]`/`test`/`[[ ]]`, variables and assignments, `export`,
  `$VAR`, `${VAR:-default}` (and `:=`, `:+`, `#`, `%`, `${#VAR}`), `$((arithmetic))`,
  `$(command substitution)`, `set -e`/`-x`/`-o pipefail` (with `-x` the `+ cmd` trace lines
  appear in the log, as `kubectl logs` shows them), `timeout N cmd`, nested `bash -c`.
  Variables come from the container's `env` (`value`, and `fieldRef` when the pod is given,
  e.g. `JOB_COMPLETION_INDEX` as the Job controller injects it) plus `HOSTNAME`.
  Kubernetes' own `$(VAR)` expansion of command/args is applied first, as the kubelet does.
* `python -c "..."`: `time.sleep(N)` calls are summed, `print("...")` literals logged,
  `sys.exit(N)`/`exit(N)`/`raise ...` give the exit code.
* Files of the container's emptyDir mounts (the kubelet passes them in): `> file`, `>> file`,
  `touch`, `rm` write them, `[ -f file ]` (`-e`, `-s`, `-d`), `cat file` and `< file` read
  them; the writes come back with their times, so what a container wrote survives its
  restarts and goes with the pod. No other path exists.
* Any other command is opaque: it is assumed to succeed after `default_duration` (once per
  script) and logs a line saying it was simulated. Scripts this shell cannot parse (here-docs,
  functions, `case`) fall back to summing their `sleep`s and taking their last `exit N`.

Tests and benchmarks can script a container outright with environment variables, which
override whatever the command implies:

* `SIM_DURATION`: seconds to run (`30`, `1.5`, `2m`, `infinity`),
* `SIM_EXIT_CODE`: exit code (0-255),
* `SIM_LOG`: the log text.

`program_for` never raises: any input yields a Program.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesim.programs.common import Exit, Forever, opaque_line, parse_sleep
from kubesim.programs.interpreter import Shell

__all__ = [
    "SIM_DURATION_ENV",
    "SIM_EXIT_CODE_ENV",
    "SIM_LOG_ENV",
    "Program",
    "k8s_expand",
    "lookup_field_ref",
    "program_for",
]


SIM_DURATION_ENV: Final = "SIM_DURATION"


SIM_EXIT_CODE_ENV: Final = "SIM_EXIT_CODE"


SIM_LOG_ENV: Final = "SIM_LOG"


Write = tuple[float, str, "str | None"]


@dataclass(frozen=True)
class Program:
    """The simulated outcome of one container: seconds it runs (before time-scale, may be
    `inf`), its exit code, the text `kubectl logs` would show, and the files it writes in
    its emptyDir mounts: (seconds after start, absolute path, content or None = removed)."""

    duration: float
    exit_code: int
    log: str
    writes: tuple[Write, ...] = ()


# ---------------------------------------------------------------------------------------------
# Entry point


def program_for(
    container: Mapping[str, Any],
    default_duration: float = 5.0,
    *,
    pod: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    mounts: Iterable[str] = (),
) -> Program:
    """Work out what `container` does. `pod` lets `fieldRef` env vars (such as the Job
    controller's `JOB_COMPLETION_INDEX`) and `HOSTNAME` resolve; `env` adds or overrides
    variables the caller resolved itself (ConfigMaps, Secrets). `mounts` are the container's
    writable emptyDir mount paths and `files` what they hold (absolute path -> content):
    the script sees them (`[ -f ]`, `cat`, `<`) and its writes (`>`, `>>`, `touch`, `rm`)
    come back in `Program.writes`."""
    try:
        return _program_for(container, default_duration, pod, env, files, tuple(mounts))
    except Exception:  # never let a strange pod spec take the kubelet down
        return Program(max(default_duration, 0.0), 0, opaque_line(container, None))


def _program_for(
    container: Mapping[str, Any],
    default_duration: float,
    pod: Mapping[str, Any] | None,
    extra_env: Mapping[str, str] | None,
    files: Mapping[str, str] | None = None,
    mounts: tuple[str, ...] = (),
) -> Program:
    variables = _container_env(container, pod, extra_env)
    argv = [k8s_expand(a, variables) for a in _as_strings(container.get("command"))]
    argv += [k8s_expand(a, variables) for a in _as_strings(container.get("args"))]
    if argv:
        text = " ".join(argv)
        mentions_all = bool(re.search(r"\b(env|printenv|set|export -p)\b", text))
        relevant = tuple(sorted((k, v) for k, v in variables.items() if mentions_all or k in text))
        name = str(container.get("name") or "")
        image = str(container.get("image") or "")
        visible = tuple(sorted((files or {}).items())) if mounts else ()
        duration, code, log, writes = _interpret(
            tuple(argv), relevant, float(default_duration), name, image, visible, mounts
        )
    else:
        duration, code, log = float(default_duration), 0, opaque_line(container, None)
        writes = ()
    return _apply_overrides(Program(duration, code, log, writes), variables)


def _apply_overrides(program: Program, variables: Mapping[str, str]) -> Program:
    duration, code, log = program.duration, program.exit_code, program.log
    if SIM_DURATION_ENV in variables:
        parsed = parse_sleep(variables[SIM_DURATION_ENV].strip())
        if parsed is not None:
            duration = parsed
    if SIM_EXIT_CODE_ENV in variables:
        try:
            code = int(variables[SIM_EXIT_CODE_ENV].strip()) % 256
        except ValueError:
            pass
    if SIM_LOG_ENV in variables:
        log = variables[SIM_LOG_ENV]
        if log and not log.endswith("\n"):
            log += "\n"
    return Program(duration, code, log, program.writes)


def _as_strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return [str(value)]


# ---------------------------------------------------------------------------------------------
# Environment


_FIELD_LABEL_RE: Final = re.compile(r"^metadata\.(labels|annotations)\[['\"]?(.*?)['\"]?\]$")


def _container_env(
    container: Mapping[str, Any],
    pod: Mapping[str, Any] | None,
    extra: Mapping[str, str] | None,
) -> dict[str, str]:
    """The variables the container process starts with, as far as they are knowable here."""
    out: dict[str, str] = {"HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    if pod is not None:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        out["HOSTNAME"] = str(spec.get("hostname") or meta.get("name") or "")
    for item in container.get("env") or ():
        if not isinstance(item, Mapping) or not item.get("name"):
            continue
        name = str(item["name"])
        if "value" in item:
            out[name] = k8s_expand(str(item.get("value") or ""), out)
        elif pod is not None:
            ref = (item.get("valueFrom") or {}).get("fieldRef") or {}
            value = lookup_field_ref(pod, str(ref.get("fieldPath") or ""))
            if value is not None:
                out[name] = value
    if extra:
        out.update({str(k): str(v) for k, v in extra.items()})
    return out


def lookup_field_ref(pod: Mapping[str, Any], path: str) -> str | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    m = _FIELD_LABEL_RE.match(path)
    if m:
        value = (meta.get(m.group(1)) or {}).get(m.group(2))
        return None if value is None else str(value)
    simple: dict[str, Any] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
    }
    value = simple.get(path)
    return None if value is None else str(value)


def k8s_expand(s: str, variables: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of command, args and env values: defined variables are
    substituted, undefined references kept verbatim, `$$` is an escaped `$`."""
    if "$" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "$" and i + 1 < n:
            nxt = s[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = s.find(")", i + 2)
                if end != -1:
                    name = s[i + 2 : end]
                    out.append(variables[name] if name in variables else s[i : end + 1])
                    i = end + 1
                    continue
        out.append(c)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Cached interpretation


@functools.lru_cache(maxsize=4096)
def _interpret(
    argv: tuple[str, ...],
    variables: tuple[tuple[str, str], ...],
    default_duration: float,
    name: str,
    image: str,
    files: tuple[tuple[str, str], ...] = (),
    mounts: tuple[str, ...] = (),
) -> tuple[float, int, str, tuple[Write, ...]]:
    """Run argv through the mini shell. Cached because every pod of a Job has the same
    command and mostly the same relevant variables; only variables the command mentions
    (and the files of its emptyDir mounts) are part of the key."""
    shell = Shell(
        dict(variables), default_duration, {"name": name, "image": image}, dict(files), mounts
    )
    try:
        shell.run_argv(list(argv))
        code = shell.status
    except Exit as e:
        code = e.code
    except Forever:
        return math.inf, 0, shell.log_text(), tuple(shell.writes)
    return shell.elapsed, code % 256, shell.log_text(), tuple(shell.writes)
