"""The shell's builtins and the few commands it simulates (`echo`, `printf`, `sleep`, `seq`,
`timeout`, `env`, ...), by name in `BUILTINS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

from kubesim.programs.common import (
    MAX_DEPTH,
    MAX_STEPS,
    Exit,
    Forever,
    LoopControl,
    Unsupported,
    parse_sleep,
)
from kubesim.programs.expressions import TestError, TestEval
from kubesim.programs.parser import parse_script
from kubesim.programs.shellstate import ShellState

# ---------------------------------------------------------------------------------------------
# Builtins


def _b_echo(sh: ShellState, args: list[str]) -> int:
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        flags = args[0][1:]
        newline = newline and "n" not in flags
        escapes = ("e" in flags) or (escapes and "E" not in flags)
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = _backslash_escapes(text)
    sh.out(text + ("\n" if newline else ""))
    return 0


def _backslash_escapes(text: str) -> str:
    table = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "a": "\a", "0": "\0", "e": "\x1b"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), "\\" + m.group(1)), text)


_PRINTF_SPEC: Final = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[diouxXfeEgGcsb%]")


def _printf_convert(spec: str, arg: str) -> str:
    kind = spec[-1]
    try:
        if kind in "diouxX":
            return (spec[:-1] + ("d" if kind in "iu" else kind)) % int(arg or 0)
        if kind in "feEgG":
            return spec % float(arg or 0)
        if kind == "b":
            return _backslash_escapes(arg)
        return (spec[:-1] + "s") % arg
    except (ValueError, TypeError):
        return arg


def _b_printf(sh: ShellState, args: list[str]) -> int:
    """printf FORMAT [ARGS]: the format is reused while arguments remain, as in bash."""
    if not args:
        sh.err("printf: usage: printf format [arguments]\n")
        return 2
    fmt, rest = _backslash_escapes(args[0]), list(args[1:])
    out: list[str] = []
    while True:
        consumed = 0
        pos = 0
        for m in _PRINTF_SPEC.finditer(fmt):
            out.append(fmt[pos : m.start()])
            pos = m.end()
            if m.group(0) == "%%":
                out.append("%")
                continue
            consumed += 1
            out.append(_printf_convert(m.group(0), rest.pop(0) if rest else ""))
        out.append(fmt[pos:])
        if not rest or not consumed:
            break
    sh.out("".join(out))
    return 0


def _b_sleep(sh: ShellState, args: list[str]) -> int:
    if not args:
        sh.err("sleep: missing operand\n")
        return 1
    total = 0.0
    for a in args:
        seconds = parse_sleep(a)
        if seconds is None:
            sh.err(f"sleep: invalid time interval '{a}'\n")
            return 1
        total += seconds
    sh.advance(total)
    return 0


def _b_exit(sh: ShellState, args: list[str]) -> int:
    if not args:
        raise Exit(sh.status)
    try:
        code = int(args[0])
    except ValueError:
        sh.err(f"sh: exit: {args[0]}: numeric argument required\n")
        raise Exit(2) from None
    raise Exit(code % 256)


def _b_return(sh: ShellState, args: list[str]) -> int:
    sh.err("sh: return: can only `return' from a function or sourced script\n")
    return 1


def _b_seq(sh: ShellState, args: list[str]) -> int:
    nums: list[float] = []
    fmt_width = ""
    while args and args[0].startswith("-") and not re.fullmatch(r"-[\d.]+", args[0]):
        if args[0] == "-w":
            fmt_width = "w"
        args = args[1:]
    try:
        nums = [float(a) for a in args]
    except ValueError:
        sh.err(f"seq: invalid floating point argument: {args!r}\n")
        return 1
    if len(nums) == 1:
        first, step, last = 1.0, 1.0, nums[0]
    elif len(nums) == 2:
        first, step, last = nums[0], 1.0, nums[1]
    elif len(nums) == 3:
        first, step, last = nums
    else:
        sh.err("seq: missing operand\n")
        return 1
    if step == 0:
        sh.err("seq: invalid Zero increment value: '0'\n")
        return 1
    integral = all(x == int(x) for x in (first, step, last))
    values: list[str] = []
    x = first
    while (step > 0 and x <= last) or (step < 0 and x >= last):
        values.append(str(int(x)) if integral else f"{x:g}")
        if len(values) > MAX_STEPS:
            break
        x += step
    if fmt_width and values:
        width = max(len(v) for v in values)
        values = [v.zfill(width) for v in values]
    sh.out("".join(v + "\n" for v in values))
    return 0


def _b_test(sh: ShellState, args: list[str]) -> int:
    try:
        return 0 if TestEval([(a, False) for a in args], double=False, shell=sh).evaluate() else 1
    except TestError as e:
        sh.err(f"sh: test: {e}\n")
        return 2


def _b_bracket(sh: ShellState, args: list[str]) -> int:
    if not args or args[-1] != "]":
        sh.err("sh: [: missing `]'\n")
        return 2
    return _b_test(sh, args[:-1])


def _b_loop_control(kind: str) -> Callable[[ShellState, list[str]], int]:
    def run(sh: ShellState, args: list[str]) -> int:
        levels = int(args[0]) if args and args[0].isdigit() else 1
        raise LoopControl(kind, max(levels, 1))

    return run


def _b_export(sh: ShellState, args: list[str]) -> int:
    for a in args:
        if a.startswith("-"):
            continue
        name, eq, value = a.partition("=")
        if eq:
            sh.vars[name] = value
    return 0


def _b_unset(sh: ShellState, args: list[str]) -> int:
    for a in args:
        if not a.startswith("-"):
            sh.vars.pop(a, None)
    return 0


def _b_set(sh: ShellState, args: list[str]) -> int:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            sh.positional = args[i + 1 :]
            return 0
        if a in ("-o", "+o"):
            if i + 1 < len(args) and args[i + 1] == "pipefail":
                sh.pipefail = a == "-o"
            if i + 1 < len(args) and args[i + 1] == "errexit":
                sh.errexit = a == "-o"
            if i + 1 < len(args) and args[i + 1] == "xtrace":
                sh.xtrace = a == "-o"
            i += 2
            continue
        if a[:1] in ("-", "+") and len(a) > 1:
            on = a[0] == "-"
            for flag in a[1:]:
                if flag == "e":
                    sh.errexit = on
                elif flag == "x":
                    sh.xtrace = on
                elif flag == "o" and i + 1 < len(args):
                    i += 1
                    if args[i] == "pipefail":
                        sh.pipefail = on
            i += 1
            continue
        sh.positional = args[i:]
        return 0
    return 0


def _b_shift(sh: ShellState, args: list[str]) -> int:
    n = int(args[0]) if args and args[0].isdigit() else 1
    if n > len(sh.positional):
        return 1
    sh.positional = sh.positional[n:]
    return 0


def _b_wait(sh: ShellState, args: list[str]) -> int:
    if sh.background_until > sh.elapsed:
        sh.advance(sh.background_until - sh.elapsed)
    return 0


def _b_read(sh: ShellState, args: list[str]) -> int:
    """`read [-r] NAME...` from the pipeline's input; no input means end of file (status 1)."""
    names = [a for a in args if not a.startswith("-")] or ["REPLY"]
    if not sh.stdin:
        for name in names:
            sh.vars[name] = ""
        return 1
    line, _, rest = sh.stdin.partition("\n")
    sh.stdin = rest
    fields = line.split(maxsplit=len(names) - 1)
    for i, name in enumerate(names):
        sh.vars[name] = fields[i] if i < len(fields) else ""
    return 0


def _b_cat(sh: ShellState, args: list[str]) -> int:
    operands = [a for a in args if not a.startswith("-") or a == "-"]
    if not operands:
        if sh.stdin:
            sh.out(sh.stdin)
        return 0
    status = 0
    for path in operands:
        if path == "-":
            if sh.stdin:
                sh.out(sh.stdin)
        elif path in sh.files:
            sh.out(sh.files[path])
        elif sh.in_mount(path):
            sh.err(f"cat: {path}: No such file or directory\n")
            status = 1
        # other paths are outside what the simulation models: they read as empty
    return status


def _b_touch(sh: ShellState, args: list[str]) -> int:
    for path in (a for a in args if not a.startswith("-")):
        if path not in sh.files:
            sh.write_file(path, "")
    return 0


def _b_rm(sh: ShellState, args: list[str]) -> int:
    recursive = any(a.startswith("-") and ("r" in a or "R" in a) for a in args)
    for path in (a for a in args if not a.startswith("-")):
        if path in sh.files:
            sh.write_file(path, None)
        elif recursive:
            prefix = path.rstrip("/") + "/"
            for name in [f for f in sh.files if f.startswith(prefix)]:
                sh.write_file(name, None)
    return 0


def _b_tee(sh: ShellState, args: list[str]) -> int:
    if sh.stdin:
        sh.out(sh.stdin)
    return 0


def _b_printenv(sh: ShellState, args: list[str]) -> int:
    if args:
        missing = 0
        for a in args:
            if a in sh.vars:
                sh.out(sh.vars[a] + "\n")
            else:
                missing = 1
        return missing
    sh.out("".join(f"{k}={v}\n" for k, v in sorted(sh.vars.items())))
    return 0


def _b_env(sh: ShellState, args: list[str]) -> int:
    rest = list(args)
    while rest and (rest[0].startswith("-") or "=" in rest[0]):
        rest = rest[1:]
    if not rest:
        return _b_printenv(sh, [])
    return sh.command(rest)


def _b_prefix(skip_options: bool) -> Callable[[ShellState, list[str]], int]:
    """`nohup cmd`, `time cmd`, `command cmd`, `exec cmd`: run the wrapped command."""

    def run(sh: ShellState, args: list[str]) -> int:
        rest = list(args)
        while skip_options and rest and rest[0].startswith("-"):
            rest = rest[1:]
        return sh.command(rest)

    return run


def _b_exec(sh: ShellState, args: list[str]) -> int:
    if not args:
        return 0
    raise Exit(sh.command(args))


def _b_timeout(sh: ShellState, args: list[str]) -> int:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-s", "-k", "--signal", "--kill-after") else rest[1:]
    if not rest:
        return 125
    limit = parse_sleep(rest[0])
    if limit is None:
        return 125
    start = sh.elapsed
    try:
        status = sh.command(rest[1:])
    except Forever:
        if math.isinf(limit):
            raise
        sh.elapsed = start + limit
        return 124
    if sh.elapsed - start > limit:
        sh.elapsed = start + limit
        return 124
    return status


def _b_eval(sh: ShellState, args: list[str]) -> int:
    if sh.depth >= MAX_DEPTH:
        return 0
    try:
        tree = parse_script(" ".join(args))
    except Unsupported:
        return sh.heuristic_script(" ".join(args))
    return sh.run_node(tree)


def _b_let(sh: ShellState, args: list[str]) -> int:
    value = 0
    for a in args:
        value = sh.arith(a)
    return 0 if value != 0 else 1


def _b_const(text: str) -> Callable[[ShellState, list[str]], int]:
    def run(sh: ShellState, args: list[str]) -> int:
        sh.out(text + "\n")
        return 0

    return run


def _b_hostname(sh: ShellState, args: list[str]) -> int:
    sh.out(sh.vars.get("HOSTNAME", "localhost") + "\n")
    return 0


BUILTINS: Final[dict[str, Callable[[ShellState, list[str]], int]]] = {
    "echo": _b_echo,
    "printf": _b_printf,
    "sleep": _b_sleep,
    "exit": _b_exit,
    "return": _b_return,
    "true": lambda sh, a: 0,
    ":": lambda sh, a: 0,
    "false": lambda sh, a: 1,
    "seq": _b_seq,
    "test": _b_test,
    "[": _b_bracket,
    "break": _b_loop_control("break"),
    "continue": _b_loop_control("continue"),
    "export": _b_export,
    "readonly": _b_export,
    "declare": _b_export,
    "typeset": _b_export,
    "local": _b_export,
    "unset": _b_unset,
    "set": _b_set,
    "shift": _b_shift,
    "wait": _b_wait,
    "cat": _b_cat,
    "touch": _b_touch,
    "rm": _b_rm,
    "read": _b_read,
    "tee": _b_tee,
    "printenv": _b_printenv,
    "env": _b_env,
    "nohup": _b_prefix(False),
    "time": _b_prefix(True),
    "command": _b_prefix(True),
    "exec": _b_exec,
    "timeout": _b_timeout,
    "eval": _b_eval,
    "let": _b_let,
    "hostname": _b_hostname,
    "whoami": _b_const("root"),
    "pwd": _b_const("/"),
    "date": _b_const("Thu Jan  1 00:00:00 UTC 1970"),
}
