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

import ast
import fnmatch
import functools
import math
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["SIM_DURATION_ENV", "SIM_EXIT_CODE_ENV", "SIM_LOG_ENV", "Program", "program_for"]

SIM_DURATION_ENV: Final = "SIM_DURATION"
SIM_EXIT_CODE_ENV: Final = "SIM_EXIT_CODE"
SIM_LOG_ENV: Final = "SIM_LOG"

_MAX_STEPS: Final = 50_000  # commands executed before a script counts as running forever
_MAX_LOG: Final = 256 * 1024  # characters of log kept
_MAX_DEPTH: Final = 16  # nesting of substitutions / nested shells
_SHELLS: Final = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh", "busybox-sh"})
_SILENT: Final = frozenset(
    {
        "cd", "mkdir", "touch", "rm", "cp", "mv", "ln", "chmod", "chown", "trap", "ulimit",
        "umask", "sync", "alias", "hash", "type", "which", "rmdir", "stty", "ldconfig",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Program:
    """The simulated outcome of one container: seconds it runs (before time-scale, may be
    `inf`), its exit code and the text `kubectl logs` would show."""

    duration: float
    exit_code: int
    log: str


# ---------------------------------------------------------------------------------------------
# Entry point


def program_for(
    container: Mapping[str, Any],
    default_duration: float = 5.0,
    *,
    pod: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Program:
    """Work out what `container` does. `pod` lets `fieldRef` env vars (such as the Job
    controller's `JOB_COMPLETION_INDEX`) and `HOSTNAME` resolve; `env` adds or overrides
    variables the caller resolved itself (ConfigMaps, Secrets)."""
    try:
        return _program_for(container, default_duration, pod, env)
    except Exception:  # never let a strange pod spec take the kubelet down
        return Program(max(default_duration, 0.0), 0, _opaque_line(container, None))


def _program_for(
    container: Mapping[str, Any],
    default_duration: float,
    pod: Mapping[str, Any] | None,
    extra_env: Mapping[str, str] | None,
) -> Program:
    variables = _container_env(container, pod, extra_env)
    argv = [_k8s_expand(a, variables) for a in _as_strings(container.get("command"))]
    argv += [_k8s_expand(a, variables) for a in _as_strings(container.get("args"))]
    if argv:
        text = " ".join(argv)
        mentions_all = bool(re.search(r"\b(env|printenv|set|export -p)\b", text))
        relevant = tuple(sorted((k, v) for k, v in variables.items() if mentions_all or k in text))
        name = str(container.get("name") or "")
        image = str(container.get("image") or "")
        duration, code, log = _interpret(
            tuple(argv), relevant, float(default_duration), name, image
        )
    else:
        duration, code, log = float(default_duration), 0, _opaque_line(container, None)
    return _apply_overrides(Program(duration, code, log), variables)


def _apply_overrides(program: Program, variables: Mapping[str, str]) -> Program:
    duration, code, log = program.duration, program.exit_code, program.log
    if SIM_DURATION_ENV in variables:
        parsed = _parse_sleep(variables[SIM_DURATION_ENV].strip())
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
    return Program(duration, code, log)


def _opaque_line(container: Mapping[str, Any], argv: Sequence[str] | None) -> str:
    name = container.get("name") if isinstance(container, Mapping) else None
    image = container.get("image") if isinstance(container, Mapping) else None
    what = f"ran {shlex.join(argv)}" if argv else "ran its image's default entrypoint"
    return f"[jobset-sim] container {name or '?'} (image {image or '?'}) {what} (simulated)\n"


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
            out[name] = _k8s_expand(str(item.get("value") or ""), out)
        elif pod is not None:
            ref = (item.get("valueFrom") or {}).get("fieldRef") or {}
            value = _field_ref(pod, str(ref.get("fieldPath") or ""))
            if value is not None:
                out[name] = value
    if extra:
        out.update({str(k): str(v) for k, v in extra.items()})
    return out


def _field_ref(pod: Mapping[str, Any], path: str) -> str | None:
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


def _k8s_expand(s: str, variables: Mapping[str, str]) -> str:
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


def _parse_sleep(arg: str) -> float | None:
    """A GNU `sleep` operand in seconds, or None if invalid."""
    if arg in ("inf", "infinity", "Inf", "INF", "Infinity"):
        return math.inf
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", arg)
    if m is None:
        return None
    factor = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * factor


# ---------------------------------------------------------------------------------------------
# Cached interpretation


@functools.lru_cache(maxsize=4096)
def _interpret(
    argv: tuple[str, ...],
    variables: tuple[tuple[str, str], ...],
    default_duration: float,
    name: str,
    image: str,
) -> tuple[float, int, str]:
    """Run argv through the mini shell. Cached because every pod of a Job has the same
    command and mostly the same relevant variables; only variables the command mentions are
    part of the key."""
    shell = _Shell(dict(variables), default_duration, {"name": name, "image": image})
    try:
        shell.run_argv(list(argv))
        code = shell.status
    except _Exit as e:
        code = e.code
    except _Forever:
        return math.inf, 0, shell.log_text()
    return shell.elapsed, code % 256, shell.log_text()


# ---------------------------------------------------------------------------------------------
# Shell: lexer


class _Unsupported(Exception):
    """Syntax this shell does not model; the caller falls back to a heuristic reading."""


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class _Forever(Exception):
    """The process would never exit (sleep infinity, endless loop)."""


class _LoopControl(Exception):
    def __init__(self, kind: str, levels: int) -> None:
        self.kind = kind
        self.levels = levels


# A word part: ("lit", text, quoted) or ("exp", "$NAME" / "${...}" / "$(...)" / ..., quoted).
_Part = tuple[str, str, bool]


@dataclass(frozen=True)
class _Word:
    parts: tuple[_Part, ...]

    @property
    def plain(self) -> str | None:
        """The text if the word is unquoted literal text (candidate reserved word)."""
        if all(kind == "lit" and not quoted for kind, _, quoted in self.parts):
            return "".join(text for _, text, _ in self.parts)
        return None

    def has_glob(self) -> bool:
        return any(k == "lit" and not q and any(c in t for c in "*?[") for k, t, q in self.parts)


# Tokens: ("word", _Word) | ("op", str) | ("arith", str) | ("redir", str)
_Tok = tuple[str, Any]
_OPS: Final = ("&&", "||", ";;", "|", "&", ";", "(", ")")
_REDIRS: Final = ("&>>", "&>", ">>", ">&", "<&", ">|", "<>", ">", "<")
_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REDIR_RE: Final = re.compile(r"\d*(?:&>>|&>|>>|>&|<&|>\||<>|>|<)")
_LOG_PATHS: Final = frozenset({"/dev/stdout", "/dev/stderr", "/proc/1/fd/1", "/proc/1/fd/2"})


def _lex(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\r":
            i += 1
        elif c == "\\" and src.startswith("\\\n", i):
            i += 2
        elif c == "\n":
            toks.append(("op", "\n"))
            i += 1
        elif c == "#":
            while i < n and src[i] != "\n":
                i += 1
        elif src.startswith("((", i):
            end = _match_close(src, i + 2, "(", ")", depth=2)
            if end is None or not src.startswith("))", end - 1):
                toks.append(("op", "("))
                i += 1
            else:
                toks.append(("arith", src[i + 2 : end - 1]))
                i = end + 1
        elif src.startswith("<<", i):
            raise _Unsupported("here-documents")
        else:
            m = _REDIR_RE.match(src, i)
            if m:
                toks.append(("redir", m.group(0)))
                i = m.end()
                continue
            for op in _OPS:
                if src.startswith(op, i):
                    toks.append(("op", op))
                    i += len(op)
                    break
            else:
                word, i = _lex_word(src, i)
                toks.append(("word", word))
    return toks


def _match_close(src: str, i: int, open_c: str, close_c: str, depth: int = 1) -> int | None:
    """Index of the character closing a construct opened before `i`, skipping quotes."""
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_c != "{":
            j = src.find("'", i + 1)
            if j < 0:
                return None
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _read_expansion(src: str, i: int) -> tuple[str, int]:
    """Read the `$...` or backquote unit starting at `i`; returns (text, next index)."""
    n = len(src)
    if src[i] == "`":
        j = src.find("`", i + 1)
        if j < 0:
            raise _Unsupported("unterminated backquote")
        return src[i : j + 1], j + 1
    if src.startswith("$((", i):
        end = _match_close(src, i + 3, "(", ")", depth=2)
        if end is not None and src.startswith("))", end - 1):
            return src[i : end + 1], end + 1
    if src.startswith("$(", i):
        end = _match_close(src, i + 2, "(", ")")
        if end is None:
            raise _Unsupported("unterminated $(")
        return src[i : end + 1], end + 1
    if src.startswith("${", i):
        end = _match_close(src, i + 2, "{", "}")
        if end is None:
            raise _Unsupported("unterminated ${")
        return src[i : end + 1], end + 1
    if i + 1 < n:
        m = _NAME_RE.match(src, i + 1)
        if m:
            return src[i : m.end()], m.end()
        if src[i + 1] in "0123456789?$#@*!-":
            return src[i : i + 2], i + 2
    return "", i  # a lone "$" is literal


def _lex_word(src: str, i: int) -> tuple[_Word, int]:
    parts: list[_Part] = []
    buf: list[str] = []

    def flush(quoted: bool) -> None:
        if buf:
            parts.append(("lit", "".join(buf), quoted))
            buf.clear()

    n = len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n;&|()<>":
            break
        if c == "\\":
            if i + 1 < n and src[i + 1] != "\n":
                flush(False)
                parts.append(("lit", src[i + 1], True))
            i += 2
        elif c == "'":
            j = src.find("'", i + 1)
            if j < 0:
                raise _Unsupported("unterminated quote")
            flush(False)
            parts.append(("lit", src[i + 1 : j], True))
            i = j + 1
        elif c == '"':
            flush(False)
            i = _lex_double_quoted(src, i + 1, parts)
        elif c in "$`":
            text, j = _read_expansion(src, i)
            if not text:
                buf.append(c)
                i += 1
            else:
                flush(False)
                parts.append(("exp", text, False))
                i = j
        else:
            buf.append(c)
            i += 1
    flush(False)
    return _Word(tuple(parts)), i


def _lex_double_quoted(src: str, i: int, parts: list[_Part]) -> int:
    """Lex the inside of "...", appending quoted parts; returns the index after the quote."""
    buf: list[str] = []
    n = len(src)
    parts.append(("lit", "", True))  # "" is still a (empty) word
    while i < n:
        c = src[i]
        if c == '"':
            if buf:
                parts.append(("lit", "".join(buf), True))
            return i + 1
        if c == "\\" and i + 1 < n and src[i + 1] in '$`"\\\n':
            if src[i + 1] != "\n":
                buf.append(src[i + 1])
            i += 2
        elif c in "$`":
            text, j = _read_expansion(src, i)
            if not text:
                buf.append(c)
                i += 1
            else:
                if buf:
                    parts.append(("lit", "".join(buf), True))
                    buf.clear()
                parts.append(("exp", text, True))
                i = j
        else:
            buf.append(c)
            i += 1
    raise _Unsupported("unterminated double quote")


# ---------------------------------------------------------------------------------------------
# Shell: parser (AST as tuples, tagged by their first element)

_Node = tuple[Any, ...]


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.pos = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def peek_word(self) -> str | None:
        tok = self.peek()
        if tok is not None and tok[0] == "word":
            plain: str | None = tok[1].plain
            return plain
        return None

    def at_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "op" and tok[1] in ops

    def expect_word(self, word: str) -> None:
        if self.peek_word() != word:
            raise _Unsupported(f"expected {word}")
        self.pos += 1

    def skip_newlines(self) -> None:
        while self.at_op("\n"):
            self.pos += 1

    def parse_program(self) -> _Node:
        node = self.parse_list(frozenset())
        if self.peek() is not None:
            raise _Unsupported(f"unexpected {self.peek()!r}")
        return node

    def parse_list(self, stops: frozenset[str]) -> _Node:
        items: list[tuple[_Node, bool]] = []
        while True:
            while self.at_op("\n", ";"):
                self.pos += 1
            tok = self.peek()
            if tok is None or self.peek_word() in stops or self.at_op(")", ";;"):
                break
            and_or = self.parse_and_or()
            background = self.at_op("&")
            if background or self.at_op(";", "\n"):
                self.pos += 1
            elif self.peek() is not None and self.peek_word() not in stops and not self.at_op(")"):
                raise _Unsupported(f"unexpected {self.peek()!r}")
            items.append((and_or, background))
        return ("list", items)

    def parse_and_or(self) -> _Node:
        first = self.parse_pipeline()
        rest: list[tuple[str, _Node]] = []
        while self.at_op("&&", "||"):
            op = self.toks[self.pos][1]
            self.pos += 1
            self.skip_newlines()
            rest.append((op, self.parse_pipeline()))
        return ("and_or", first, rest)

    def parse_pipeline(self) -> _Node:
        negate = False
        while self.peek_word() == "!":
            negate = not negate
            self.pos += 1
        cmds = [self.parse_command()]
        while self.at_op("|"):
            self.pos += 1
            self.skip_newlines()
            cmds.append(self.parse_command())
        return ("pipeline", negate, cmds)

    def parse_command(self) -> _Node:
        tok = self.peek()
        if tok is None:
            raise _Unsupported("missing command")
        word = self.peek_word()
        node: _Node
        if tok[0] == "arith":
            self.pos += 1
            node = ("arith", tok[1])
        elif word == "if":
            node = self.parse_if()
        elif word == "for":
            node = self.parse_for()
        elif word in ("while", "until"):
            self.pos += 1
            cond = self.parse_list(frozenset({"do"}))
            self.expect_word("do")
            body = self.parse_list(frozenset({"done"}))
            self.expect_word("done")
            node = ("while", word == "until", cond, body)
        elif word == "{":
            self.pos += 1
            body = self.parse_list(frozenset({"}"}))
            self.expect_word("}")
            node = ("group", body)
        elif word == "[[":
            self.pos += 1
            parts: list[_Tok] = []
            while self.peek_word() != "]]":
                t = self.peek()
                if t is None:
                    raise _Unsupported("unterminated [[")
                parts.append(t)
                self.pos += 1
            self.pos += 1
            node = ("cond", parts)
        elif word in ("case", "function", "select", "coproc"):
            raise _Unsupported(word)
        elif self.at_op("("):
            self.pos += 1
            body = self.parse_list(frozenset())
            if not self.at_op(")"):
                raise _Unsupported("unterminated (")
            self.pos += 1
            node = ("subshell", body)
        else:
            return self.parse_simple()
        redirs = self.parse_redirections()
        return ("redirected", node, redirs) if redirs else node

    def parse_redirections(self) -> list[tuple[str, _Word]]:
        out: list[tuple[str, _Word]] = []
        while True:
            tok = self.peek()
            if tok is None or tok[0] != "redir":
                return out
            self.pos += 1
            target = self.peek()
            if target is None or target[0] != "word":
                raise _Unsupported("redirection without target")
            self.pos += 1
            out.append((tok[1], target[1]))

    def parse_simple(self) -> _Node:
        assigns: list[tuple[str, _Word]] = []
        words: list[_Word] = []
        redirs: list[tuple[str, _Word]] = []
        while True:
            tok = self.peek()
            if tok is None:
                break
            if tok[0] == "redir":
                redirs.extend(self.parse_redirections())
                continue
            if tok[0] != "word":
                if tok[0] == "op" and tok[1] == "(" and len(words) == 1 and not assigns:
                    raise _Unsupported("function definition")
                break
            word: _Word = tok[1]
            if not words:
                first = word.parts[0] if word.parts else None
                if first and first[0] == "lit" and not first[2]:
                    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=", first[1])
                    if m:
                        rest = first[1][m.end() :]
                        value_parts = ((("lit", rest, False),) if rest else ()) + word.parts[1:]
                        assigns.append((m.group(1) + m.group(2), _Word(value_parts)))
                        self.pos += 1
                        continue
            words.append(word)
            self.pos += 1
        if not words and not assigns and not redirs:
            raise _Unsupported(f"unexpected {self.peek()!r}")
        return ("simple", assigns, words, redirs)

    def parse_if(self) -> _Node:
        self.expect_word("if")
        clauses: list[tuple[_Node, _Node]] = []
        cond = self.parse_list(frozenset({"then"}))
        self.expect_word("then")
        body = self.parse_list(frozenset({"elif", "else", "fi"}))
        clauses.append((cond, body))
        else_body: _Node | None = None
        while True:
            word = self.peek_word()
            if word == "elif":
                self.pos += 1
                cond = self.parse_list(frozenset({"then"}))
                self.expect_word("then")
                body = self.parse_list(frozenset({"elif", "else", "fi"}))
                clauses.append((cond, body))
            elif word == "else":
                self.pos += 1
                else_body = self.parse_list(frozenset({"fi"}))
            else:
                self.expect_word("fi")
                return ("if", clauses, else_body)

    def parse_for(self) -> _Node:
        self.expect_word("for")
        tok = self.peek()
        if tok is not None and tok[0] == "arith":
            self.pos += 1
            while self.at_op(";", "\n"):
                self.pos += 1
            self.expect_word("do")
            body = self.parse_list(frozenset({"done"}))
            self.expect_word("done")
            return ("cfor", tok[1], body)
        name = self.peek_word()
        if name is None or not _NAME_RE.fullmatch(name):
            raise _Unsupported("bad for loop")
        self.pos += 1
        self.skip_newlines()
        words: list[_Word] | None = None
        if self.peek_word() == "in":
            self.pos += 1
            words = []
            while True:
                t = self.peek()
                if t is None or t[0] != "word":
                    break
                words.append(t[1])
                self.pos += 1
        while self.at_op(";", "\n"):
            self.pos += 1
        self.expect_word("do")
        body = self.parse_list(frozenset({"done"}))
        self.expect_word("done")
        return ("for", name, words, body)


def _parse_script(src: str) -> _Node:
    return _Parser(_lex(src)).parse_program()


# ---------------------------------------------------------------------------------------------
# Shell: interpreter


class _Shell:
    """Executes the AST against a virtual clock: sleeping advances `elapsed`, output is
    collected as the container log (stdout and stderr together, as `kubectl logs` shows)."""

    def __init__(
        self, variables: dict[str, str], default_duration: float, container: Mapping[str, str]
    ) -> None:
        self.vars = variables
        self.positional: list[str] = []
        self.arg0 = "sh"
        self.default_duration = default_duration
        self.container = container
        self.elapsed = 0.0
        self.status = 0
        self.errexit = False
        self.xtrace = False
        self.pipefail = False
        self.condition_depth = 0
        self.depth = 0
        self.steps = 0
        self.opaque_ran = False
        self.scripts = 0  # shells running around the current command
        self.subst_status: int | None = None  # status of the last $(...) in this command
        self.background_until = 0.0
        self.log: list[str] = []
        self.log_size = 0
        self.sinks: list[list[str] | None] = []  # captured stdout stack; None discards
        self.stdin: str | None = None

    # -- output --------------------------------------------------------------------------------

    def log_text(self) -> str:
        return "".join(self.log)

    def _to_log(self, text: str) -> None:
        if self.log_size < _MAX_LOG:
            self.log.append(text[: _MAX_LOG - self.log_size])
            self.log_size += len(text)

    def out(self, text: str) -> None:
        if self.sinks:
            sink = self.sinks[-1]
            if sink is not None:
                sink.append(text)
        else:
            self._to_log(text)

    def err(self, text: str) -> None:
        self._to_log(text)

    def trace(self, words: Sequence[str]) -> None:
        if self.xtrace:
            self.err("+" * (self.depth + 1) + " " + " ".join(_trace_quote(w) for w in words) + "\n")

    def tick(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Forever()

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds
        if math.isinf(self.elapsed):
            raise _Forever()

    # -- entry points ------------------------------------------------------------------------

    def run_argv(self, argv: list[str]) -> None:
        """Run a container's argv as the kubelet would exec it (no shell around it)."""
        self.status = self.command(argv)

    def run_script(self, src: str) -> int:
        try:
            tree = _parse_script(src)
        except (_Unsupported, RecursionError):
            return self._heuristic_script(src)
        try:
            self.run_node(tree)
        except _LoopControl:
            pass
        return self.status

    def _heuristic_script(self, src: str) -> int:
        """Fallback for scripts beyond this shell: sum the sleeps, take the last exit."""
        for m in re.finditer(r"\bsleep\s+([^\s;&|)]+)", src):
            seconds = _parse_sleep(m.group(1))
            if seconds is not None:
                self.advance(seconds)
        for m in re.finditer(r"^\s*echo\s+[\"']?(.*?)[\"']?\s*$", src, re.M):
            self.out(m.group(1) + "\n")
        codes = re.findall(r"\bexit\s+(\d+)", src)
        if codes:
            raise _Exit(int(codes[-1]) % 256)
        stripped = src.strip()
        return 1 if stripped.endswith("false") else 0

    # -- AST ---------------------------------------------------------------------------------

    def run_node(self, node: _Node) -> int:
        kind = node[0]
        if kind == "list":
            for item, background in node[1]:
                if background:
                    self.run_background(item)
                else:
                    self.run_and_or(item)
            return self.status
        if kind == "and_or":
            return self.run_and_or(node)
        if kind == "pipeline":
            return self.run_pipeline(node)
        self.tick()
        try:
            return self._dispatch(kind, node)
        except _Unsupported as e:
            self.err(f"sh: {e}: bad substitution\n")
            self.status = 1
            return 1

    def _dispatch(self, kind: str, node: _Node) -> int:
        if kind == "simple":
            self.status = self.run_simple(node)
        elif kind == "if":
            self.status = self.run_if(node)
        elif kind == "for":
            self.status = self.run_for(node)
        elif kind == "cfor":
            self.status = self.run_cfor(node)
        elif kind == "while":
            self.status = self.run_while(node)
        elif kind == "group":
            self.status = self.run_node(node[1])
        elif kind == "subshell":
            self.status = self.run_subshell(node[1])
        elif kind == "cond":
            self.status = self.run_cond(node[1])
        elif kind == "arith":
            value = self.arith(self.expand_string(node[1]))
            self.trace(["((", node[1].strip(), "))"])
            self.status = 0 if value != 0 else 1
        elif kind == "redirected":
            self.status = self.with_redirections(node[2], lambda: self.run_node(node[1]))
        return self.status

    def run_and_or(self, node: _Node) -> int:
        _, first, rest = node
        status = self.run_pipeline(first)
        last_ran = 0
        for i, (op, pipeline) in enumerate(rest, start=1):
            if (op == "&&") == (status == 0):
                status = self.run_pipeline(pipeline)
                last_ran = i
        self.status = status
        final = first if last_ran == 0 else rest[last_ran - 1][1]
        if (
            status != 0
            and self.errexit
            and self.condition_depth == 0
            and last_ran == len(rest)
            and not final[1]
        ):
            raise _Exit(status)
        return status

    def run_pipeline(self, node: _Node) -> int:
        _, negate, cmds = node
        if len(cmds) == 1:
            status = self.run_node(cmds[0])
        else:
            saved_stdin = self.stdin
            data: str | None = None
            statuses: list[int] = []
            for i, cmd in enumerate(cmds):
                self.stdin = data
                if i < len(cmds) - 1:
                    sink: list[str] = []
                    self.sinks.append(sink)
                    try:
                        statuses.append(self.run_isolated(cmd))
                    finally:
                        self.sinks.pop()
                    data = "".join(sink)
                else:
                    statuses.append(self.run_isolated(cmd))
            self.stdin = saved_stdin
            status = statuses[-1]
            if self.pipefail:
                status = next((s for s in reversed(statuses) if s != 0), 0)
        if negate:
            status = 0 if status else 1
        self.status = status
        return status

    def run_isolated(self, node: _Node) -> int:
        """Run in a subshell: variable changes and `exit` stay inside (pipeline stages,
        `( ... )`, command substitution)."""
        saved = (dict(self.vars), list(self.positional), self.errexit, self.xtrace)
        try:
            return self.run_node(node)
        except _Exit as e:
            return e.code
        except _LoopControl:
            return self.status
        finally:
            self.vars, self.positional, self.errexit, self.xtrace = (
                saved[0],
                saved[1],
                saved[2],
                saved[3],
            )

    def run_subshell(self, body: _Node) -> int:
        return self.run_isolated(body)

    def run_background(self, node: _Node) -> None:
        """`cmd &`: runs alongside; its time only counts if the script `wait`s for it."""
        start = self.elapsed
        try:
            self.run_isolated(node)
            end = self.elapsed
        except _Forever:
            end = math.inf
        self.elapsed = start
        self.background_until = max(self.background_until, end)
        self.status = 0

    def run_if(self, node: _Node) -> int:
        _, clauses, else_body = node
        for cond, body in clauses:
            self.condition_depth += 1
            try:
                ok = self.run_node(cond) == 0
            finally:
                self.condition_depth -= 1
            if ok:
                return self.run_node(body)
        if else_body is not None:
            return self.run_node(else_body)
        return 0

    def _loop_body(self, body: _Node) -> bool:
        """Run one iteration; False when the loop must stop (break)."""
        try:
            self.run_node(body)
        except _LoopControl as ctl:
            if ctl.levels > 1:
                raise _LoopControl(ctl.kind, ctl.levels - 1) from None
            return ctl.kind == "continue"
        return True

    def run_for(self, node: _Node) -> int:
        _, name, words, body = node
        items = self.positional if words is None else self.expand_words(words)
        self.status = 0
        for item in items:
            self.tick()
            self.vars[name] = item
            if not self._loop_body(body):
                break
        return self.status

    def run_cfor(self, node: _Node) -> int:
        _, header, body = node
        parts = header.split(";")
        if len(parts) != 3:
            raise _Unsupported("for ((...))")
        init, cond, step = parts
        if init.strip():
            self.arith(self.expand_string(init))
        self.status = 0
        while True:
            self.tick()
            if cond.strip() and self.arith(self.expand_string(cond)) == 0:
                break
            if not self._loop_body(body):
                break
            if step.strip():
                self.arith(self.expand_string(step))
        return self.status

    def run_while(self, node: _Node) -> int:
        _, until, cond, body = node
        status = 0
        while True:
            self.tick()
            self.condition_depth += 1
            try:
                ok = self.run_node(cond) == 0
            finally:
                self.condition_depth -= 1
            if ok == until:
                break
            if not self._loop_body(body):
                break
            status = self.status
        self.status = status
        return status

    def run_cond(self, toks: list[_Tok]) -> int:
        args: list[tuple[str, bool]] = []  # (text, is_pattern)
        for kind, value in toks:
            if kind == "word":
                args.append(("".join(self.expand_word(value, split=False)), value.has_glob()))
            elif kind in ("op", "redir"):
                args.append((str(value), False))
            else:
                raise _Unsupported("[[ ... ]] content")
        self.trace(["[[", *(a for a, _ in args), "]]"])
        try:
            return 0 if _TestEval(args, double=True, shell=self).evaluate() else 1
        except _TestError:
            return 2

    def with_redirections(self, redirs: list[tuple[str, _Word]], run: Callable[[], int]) -> int:
        """Only where stdout goes matters: to a file or /dev/null it leaves the log; to
        stderr (`>&2`) it stays, since `kubectl logs` shows both streams."""
        hide = False
        for op, word in redirs:
            m = re.match(r"(\d*)(.*)", op)
            fd, bare = (m.group(1), m.group(2)) if m else ("", op)
            if bare in ("<", "<&", "<>"):
                continue
            dest = "".join(self.expand_word(word, split=False))
            if bare in ("&>", "&>>") or fd in ("", "1"):
                if bare == ">&" and dest in ("1", "2"):
                    hide = False
                else:
                    hide = dest not in _LOG_PATHS
        if not hide:
            return run()
        self.sinks.append(None)
        try:
            return run()
        finally:
            self.sinks.pop()

    # -- simple commands ---------------------------------------------------------------------

    def run_simple(self, node: _Node) -> int:
        _, assigns, words, redirs = node
        self.subst_status = None
        argv = self.expand_words(words)
        values: list[tuple[str, str]] = []
        for name, word in assigns:
            value = "".join(self.expand_word(word, split=False))
            if name.endswith("+"):
                name = name[:-1]
                value = self.vars.get(name, "") + value
            values.append((name, value))
        if not argv:
            self.trace([f"{n}={v}" for n, v in values])
            self.vars.update(values)
            return self.subst_status or 0
        self.trace(argv)
        if redirs:
            return self.with_redirections(redirs, lambda: self.command(argv))
        return self.command(argv)

    def command(self, argv: list[str]) -> int:
        if not argv:
            return 0
        name = argv[0].rsplit("/", 1)[-1]
        args = argv[1:]
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            return builtin(self, args)
        if name in _SHELLS:
            return self.run_shell(args)
        if name.startswith("python") and re.fullmatch(r"python[0-9.]*", name):
            return self.run_python(argv)
        if name in _SILENT:
            return 0
        return self.opaque(argv)

    def opaque(self, argv: list[str]) -> int:
        """A command whose effect cannot be known: it succeeds, and the first one takes the
        default duration (a training script "runs for a while")."""
        if not self.opaque_ran:
            self.opaque_ran = True
            self.advance(self.default_duration)
        if self.depth == 0 and not self.sinks:
            self.err(_opaque_line(self.container, argv))
        return 0

    def run_shell(self, args: list[str]) -> int:
        """`sh [-flags] -c SCRIPT [ARG0 ARGS...]`; other invocations are opaque."""
        script: str | None = None
        flags: set[str] = set()
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-o", "+o") and i + 1 < len(args):
                if args[i + 1] == "pipefail":
                    flags.add("pipefail")
                i += 2
                continue
            if a == "--":
                i += 1
                break
            if a.startswith(("-", "+")) and len(a) > 1 and not a.startswith("--"):
                flags.update(a[1:])
                i += 1
                continue
            if a.startswith("--"):
                i += 1
                continue
            break
        if "c" not in flags:
            if i >= len(args):
                return 0  # no script and no stdin: the shell exits at once
            return self.opaque(["sh", *args])
        if i >= len(args):
            self.err("sh: -c: option requires an argument\n")
            return 2
        script = args[i]
        rest = args[i + 1 :]
        if self.depth >= _MAX_DEPTH:
            return self.opaque(["sh", "-c", script])
        saved = (self.vars, self.positional, self.arg0, self.errexit, self.xtrace, self.pipefail)
        self.vars = dict(self.vars)
        self.arg0 = rest[0] if rest else self.arg0
        self.positional = rest[1:]
        self.errexit = "e" in flags
        self.xtrace = "x" in flags
        self.pipefail = "pipefail" in flags
        nested = self.scripts > 0  # the container's own shell exits the container
        if nested:
            self.depth += 1
        self.scripts += 1
        try:
            status = self.run_script(script)
        except _Exit as e:
            if not nested:
                raise
            status = e.code
        finally:
            self.scripts -= 1
            if nested:
                self.depth -= 1
            (self.vars, self.positional, self.arg0, self.errexit, self.xtrace, self.pipefail) = (
                saved
            )
        return status

    def run_python(self, argv: list[str]) -> int:
        code: str | None = None
        for i, a in enumerate(argv[1:], start=1):
            if a == "-c" and i + 1 < len(argv):
                code = argv[i + 1]
                break
            if not a.startswith("-"):
                break
        if code is None:
            return self.opaque(argv)
        for m in re.finditer(r"\bsleep\(\s*([0-9][0-9_.eE+-]*)\s*\)", code):
            try:
                self.advance(max(float(m.group(1).replace("_", "")), 0.0))
            except ValueError:
                continue
        for m in re.finditer(r"\bprint\(\s*[rbuf]?(\"|')(.*?)\1\s*[,)]", code):
            self.out(m.group(2) + "\n")
        exits = list(
            re.finditer(
                r"\b(?:sys\.exit|exit|quit|os\._exit|SystemExit)\(\s*([^)]*?)\s*\)|"
                r"\braise\s+(?!SystemExit)([A-Za-z_][\w.]*)",
                code,
            )
        )
        if not exits:
            return 0
        last = exits[-1]
        if last.group(2):
            self.err("Traceback (most recent call last):\n")
            self.err(f'  File "<string>", line 1, in <module>\n{last.group(2)}\n')
            return 1
        arg = last.group(1)
        if not arg or arg == "None":
            return 0
        try:
            return int(arg, 0) % 256
        except ValueError:
            self.err(arg.strip("\"'") + "\n")
            return 1

    # -- expansion ---------------------------------------------------------------------------

    def expand_words(self, words: Iterable[_Word]) -> list[str]:
        out: list[str] = []
        for w in words:
            out.extend(self.expand_word(w))
        return out

    def expand_word(self, word: _Word, split: bool = True) -> list[str]:
        """Parameter/command/arithmetic expansion, then field splitting of unquoted results
        (no globbing: there is no filesystem)."""
        fields: list[str] = []
        cur: list[str] = []
        active = False
        for kind, text, quoted in word.parts:
            if kind == "lit":
                cur.append(text)
                active = True
                continue
            value = self.expand_unit(text)
            if quoted or not split:
                cur.append(value)
                active = active or quoted or bool(value)
                continue
            if not value:
                continue
            pieces = value.split()
            if value[0].isspace() and active:
                fields.append("".join(cur))
                cur, active = [], False
            for k, piece in enumerate(pieces):
                if k > 0:
                    fields.append("".join(cur))
                    cur = []
                cur.append(piece)
                active = True
            if value[-1].isspace() and active:
                fields.append("".join(cur))
                cur, active = [], False
        if active:
            fields.append("".join(cur))
        if not split:
            return ["".join(fields)] if fields else [""]
        return fields

    def expand_string(self, text: str) -> str:
        """Expand `text` as if it were inside double quotes."""
        if "$" not in text and "`" not in text:
            return text
        parts: list[_Part] = []
        _lex_double_quoted(text + '"', 0, parts)
        return "".join(self.expand_word(_Word(tuple(parts)), split=False))

    def expand_unit(self, text: str) -> str:
        if text.startswith("$(("):
            return str(self.arith(self.expand_string(text[3:-2])))
        if text.startswith("$("):
            return self.substitute(text[2:-1])
        if text.startswith("`"):
            return self.substitute(text[1:-1])
        if text.startswith("${"):
            return self.expand_braced(text[2:-1])
        return self.param(text[1:])

    def param(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name == "#":
            return str(len(self.positional))
        if name in ("@", "*"):
            return " ".join(self.positional)
        if name == "0":
            return self.arg0
        if name == "!":
            return ""
        if name == "-":
            return ("e" if self.errexit else "") + ("x" if self.xtrace else "")
        if name.isdigit():
            idx = int(name)
            return self.positional[idx - 1] if 0 < idx <= len(self.positional) else ""
        return self.vars.get(name, "")

    def _is_set(self, name: str) -> bool:
        if name.isdigit():
            return 0 < int(name) <= len(self.positional) or name == "0"
        return name in self.vars or name in ("?", "$", "#", "@", "*", "-", "!")

    def expand_braced(self, body: str) -> str:
        if body.startswith("#") and len(body) > 1:
            return str(len(self.param(body[1:])))
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$#@*!-])(.*)$", body, re.S)
        if m is None:
            raise _Unsupported(f"${{{body}}}")
        name, op = m.group(1), m.group(2)
        value = self.param(name)
        if not op:
            return value
        for prefix in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
            if op.startswith(prefix):
                word = op[len(prefix) :]
                use_default = (not value) if prefix.startswith(":") else not self._is_set(name)
                kind = prefix[-1]
                if kind == "-":
                    return self.expand_string(word) if use_default else value
                if kind == "=":
                    if use_default:
                        self.vars[name] = self.expand_string(word)
                        return self.vars[name]
                    return value
                if kind == "+":
                    return "" if use_default else self.expand_string(word)
                if use_default:  # "?"
                    self.err(f"sh: {name}: {self.expand_string(word) or 'parameter not set'}\n")
                    raise _Exit(1)
                return value
        for prefix in ("##", "#", "%%", "%"):
            if op.startswith(prefix):
                pattern = self.expand_string(op[len(prefix) :])
                return _strip_pattern(value, pattern, prefix)
        raise _Unsupported(f"${{{body}}}")

    def substitute(self, src: str) -> str:
        """`$(...)`: run in a subshell capturing stdout; time spent there still passes."""
        if self.depth >= _MAX_DEPTH:
            return ""
        try:
            tree = _parse_script(src)
        except _Unsupported:
            return ""
        sink: list[str] = []
        self.sinks.append(sink)
        self.depth += 1
        try:
            status = self.run_isolated(tree)
        finally:
            self.depth -= 1
            self.sinks.pop()
        self.subst_status = status
        return "".join(sink).rstrip("\n")

    def arith(self, expr: str) -> int:
        return _arith(expr, self.vars)


def _strip_pattern(value: str, pattern: str, op: str) -> str:
    n = len(value)
    if op in ("#", "##"):
        ends = range(0, n + 1) if op == "#" else range(n, -1, -1)
        for end in ends:
            if fnmatch.fnmatchcase(value[:end], pattern):
                return value[end:]
        return value
    starts = range(n, -1, -1) if op == "%" else range(0, n + 1)
    for start in starts:
        if fnmatch.fnmatchcase(value[start:], pattern):
            return value[:start]
    return value


def _trace_quote(word: str) -> str:
    if word and re.fullmatch(r"[\w@%+=:,./\[\]-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------------------------------------
# Builtins


def _b_echo(sh: _Shell, args: list[str]) -> int:
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


def _b_printf(sh: _Shell, args: list[str]) -> int:
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


def _b_sleep(sh: _Shell, args: list[str]) -> int:
    if not args:
        sh.err("sleep: missing operand\n")
        return 1
    total = 0.0
    for a in args:
        seconds = _parse_sleep(a)
        if seconds is None:
            sh.err(f"sleep: invalid time interval '{a}'\n")
            return 1
        total += seconds
    sh.advance(total)
    return 0


def _b_exit(sh: _Shell, args: list[str]) -> int:
    if not args:
        raise _Exit(sh.status)
    try:
        code = int(args[0])
    except ValueError:
        sh.err(f"sh: exit: {args[0]}: numeric argument required\n")
        raise _Exit(2) from None
    raise _Exit(code % 256)


def _b_return(sh: _Shell, args: list[str]) -> int:
    sh.err("sh: return: can only `return' from a function or sourced script\n")
    return 1


def _b_seq(sh: _Shell, args: list[str]) -> int:
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
        if len(values) > _MAX_STEPS:
            break
        x += step
    if fmt_width and values:
        width = max(len(v) for v in values)
        values = [v.zfill(width) for v in values]
    sh.out("".join(v + "\n" for v in values))
    return 0


def _b_test(sh: _Shell, args: list[str]) -> int:
    try:
        return 0 if _TestEval([(a, False) for a in args], double=False, shell=sh).evaluate() else 1
    except _TestError as e:
        sh.err(f"sh: test: {e}\n")
        return 2


def _b_bracket(sh: _Shell, args: list[str]) -> int:
    if not args or args[-1] != "]":
        sh.err("sh: [: missing `]'\n")
        return 2
    return _b_test(sh, args[:-1])


def _b_loop_control(kind: str) -> Callable[[_Shell, list[str]], int]:
    def run(sh: _Shell, args: list[str]) -> int:
        levels = int(args[0]) if args and args[0].isdigit() else 1
        raise _LoopControl(kind, max(levels, 1))

    return run


def _b_export(sh: _Shell, args: list[str]) -> int:
    for a in args:
        if a.startswith("-"):
            continue
        name, eq, value = a.partition("=")
        if eq:
            sh.vars[name] = value
    return 0


def _b_unset(sh: _Shell, args: list[str]) -> int:
    for a in args:
        if not a.startswith("-"):
            sh.vars.pop(a, None)
    return 0


def _b_set(sh: _Shell, args: list[str]) -> int:
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


def _b_shift(sh: _Shell, args: list[str]) -> int:
    n = int(args[0]) if args and args[0].isdigit() else 1
    if n > len(sh.positional):
        return 1
    sh.positional = sh.positional[n:]
    return 0


def _b_wait(sh: _Shell, args: list[str]) -> int:
    if sh.background_until > sh.elapsed:
        sh.advance(sh.background_until - sh.elapsed)
    return 0


def _b_read(sh: _Shell, args: list[str]) -> int:
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


def _b_cat(sh: _Shell, args: list[str]) -> int:
    if not [a for a in args if not a.startswith("-") or a == "-"] and sh.stdin:
        sh.out(sh.stdin)
    return 0


def _b_tee(sh: _Shell, args: list[str]) -> int:
    if sh.stdin:
        sh.out(sh.stdin)
    return 0


def _b_printenv(sh: _Shell, args: list[str]) -> int:
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


def _b_env(sh: _Shell, args: list[str]) -> int:
    rest = list(args)
    while rest and (rest[0].startswith("-") or "=" in rest[0]):
        rest = rest[1:]
    if not rest:
        return _b_printenv(sh, [])
    return sh.command(rest)


def _b_prefix(skip_options: bool) -> Callable[[_Shell, list[str]], int]:
    """`nohup cmd`, `time cmd`, `command cmd`, `exec cmd`: run the wrapped command."""

    def run(sh: _Shell, args: list[str]) -> int:
        rest = list(args)
        while skip_options and rest and rest[0].startswith("-"):
            rest = rest[1:]
        return sh.command(rest)

    return run


def _b_exec(sh: _Shell, args: list[str]) -> int:
    if not args:
        return 0
    raise _Exit(sh.command(args))


def _b_timeout(sh: _Shell, args: list[str]) -> int:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-s", "-k", "--signal", "--kill-after") else rest[1:]
    if not rest:
        return 125
    limit = _parse_sleep(rest[0])
    if limit is None:
        return 125
    start = sh.elapsed
    try:
        status = sh.command(rest[1:])
    except _Forever:
        if math.isinf(limit):
            raise
        sh.elapsed = start + limit
        return 124
    if sh.elapsed - start > limit:
        sh.elapsed = start + limit
        return 124
    return status


def _b_eval(sh: _Shell, args: list[str]) -> int:
    if sh.depth >= _MAX_DEPTH:
        return 0
    try:
        tree = _parse_script(" ".join(args))
    except _Unsupported:
        return sh._heuristic_script(" ".join(args))
    return sh.run_node(tree)


def _b_let(sh: _Shell, args: list[str]) -> int:
    value = 0
    for a in args:
        value = sh.arith(a)
    return 0 if value != 0 else 1


def _b_const(text: str) -> Callable[[_Shell, list[str]], int]:
    def run(sh: _Shell, args: list[str]) -> int:
        sh.out(text + "\n")
        return 0

    return run


def _b_hostname(sh: _Shell, args: list[str]) -> int:
    sh.out(sh.vars.get("HOSTNAME", "localhost") + "\n")
    return 0


_BUILTINS: Final[dict[str, Callable[[_Shell, list[str]], int]]] = {
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


# ---------------------------------------------------------------------------------------------
# test / [ ] / [[ ]]


class _TestError(Exception):
    pass


_UNARY: Final = frozenset(
    {"-z", "-n", "-e", "-f", "-d", "-r", "-w", "-x", "-s", "-L", "-h", "-v", "-p", "-S", "-t"}
)
_BINARY: Final = frozenset(
    {"=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "=~", "-nt", "-ot"}
)


class _TestEval:
    """Recursive descent over test arguments; `-a`/`-o` for `[`, `&&`/`||` for `[[`."""

    def __init__(self, args: list[tuple[str, bool]], double: bool, shell: _Shell) -> None:
        self.args = args
        self.double = double
        self.shell = shell
        self.pos = 0

    def evaluate(self) -> bool:
        if not self.args:
            return False
        result = self.parse_or()
        if self.pos != len(self.args):
            raise _TestError(f"{self.args[self.pos][0]}: unexpected argument")
        return result

    def _peek(self) -> str | None:
        return self.args[self.pos][0] if self.pos < len(self.args) else None

    def parse_or(self) -> bool:
        value = self.parse_and()
        while self._peek() in (("||",) if self.double else ("-o",)):
            self.pos += 1
            rhs = self.parse_and()
            value = value or rhs
        return value

    def parse_and(self) -> bool:
        value = self.parse_not()
        while self._peek() in (("&&",) if self.double else ("-a",)):
            self.pos += 1
            rhs = self.parse_not()
            value = value and rhs
        return value

    def parse_not(self) -> bool:
        if self._peek() == "!" and self.pos + 1 < len(self.args):
            self.pos += 1
            return not self.parse_not()
        return self.parse_primary()

    def parse_primary(self) -> bool:
        tok = self._peek()
        if tok is None:
            raise _TestError("argument expected")
        if tok == "(":
            self.pos += 1
            value = self.parse_or()
            if self._peek() != ")":
                raise _TestError("`)' expected")
            self.pos += 1
            return value
        if self.pos + 2 < len(self.args) and self.args[self.pos + 1][0] in _BINARY:
            lhs = tok
            op = self.args[self.pos + 1][0]
            rhs, pattern = self.args[self.pos + 2]
            self.pos += 3
            return self.binary(lhs, op, rhs, pattern)
        if tok in _UNARY and self.pos + 1 < len(self.args):
            arg = self.args[self.pos + 1][0]
            self.pos += 2
            if tok == "-z":
                return arg == ""
            if tok == "-n":
                return arg != ""
            if tok == "-v":
                return arg in self.shell.vars
            return False  # no filesystem: files do not exist
        self.pos += 1
        return tok != ""

    def _int(self, text: str) -> int:
        try:
            return int(text.strip())
        except ValueError:
            if self.double:
                return _arith(text, self.shell.vars)
            raise _TestError(f"{text}: integer expression expected") from None

    def binary(self, lhs: str, op: str, rhs: str, pattern: bool) -> bool:
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(lhs, rhs) if self.double and pattern else lhs == rhs
        if op == "!=":
            return not fnmatch.fnmatchcase(lhs, rhs) if self.double and pattern else lhs != rhs
        if op == "<":
            return lhs < rhs
        if op == ">":
            return lhs > rhs
        if op == "=~":
            try:
                return re.search(rhs, lhs) is not None
            except re.error:
                raise _TestError(f"invalid regex {rhs}") from None
        if op in ("-nt", "-ot"):
            return False
        a, b = self._int(lhs), self._int(rhs)
        return {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[op]


# ---------------------------------------------------------------------------------------------
# Arithmetic $(( ))


def _arith(expr: str, variables: dict[str, str]) -> int:
    """Evaluate shell arithmetic: integers, variables, + - * / % ** << >> & | ^ ~ ! comparisons,
    && ||, and the assignments =, +=, -=, *=, /=, %=, ++, -- on plain names."""
    expr = expr.strip()
    if not expr:
        return 0
    if ";" in expr or "," in expr:
        value = 0
        for piece in re.split(r"[;,]", expr):
            value = _arith(piece, variables)
        return value
    m = re.fullmatch(r"(\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(\+\+|--)", expr)
    if m:
        name = m.group(2) or m.group(3)
        op = m.group(1) or m.group(4)
        old = _arith_var(variables, name)
        new = old + (1 if op == "++" else -1)
        variables[name] = str(new)
        return new if m.group(1) else old
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*([-+*/%]?)=(?!=)\s*(.+)", expr, re.S)
    if m:
        name, op, rhs = m.group(1), m.group(2), m.group(3)
        value = _arith(rhs, variables)
        if op:
            value = _arith_binop(op, _arith_var(variables, name), value)
        variables[name] = str(value)
        return value
    text = expr.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    text = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", r"\1", text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise _Unsupported(f"arithmetic {expr!r}") from None
    return _arith_eval(tree.body, variables)


def _arith_var(variables: Mapping[str, str], name: str) -> int:
    raw = variables.get(name, "").strip()
    if not raw:
        return 0
    try:
        return int(raw, 0) if not re.fullmatch(r"0\d+", raw) else int(raw, 8)
    except ValueError:
        return 0


def _arith_binop(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise _Unsupported("division by zero")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a - b * _arith_binop("/", a, b)  # "%": remainder with the sign of a, as in C


_AST_BINOPS: Final[dict[type[ast.operator], Callable[[int, int], int]]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: _arith_binop("/", a, b),
    ast.FloorDiv: lambda a, b: _arith_binop("/", a, b),
    ast.Mod: lambda a, b: _arith_binop("%", a, b),
    ast.Pow: lambda a, b: a**b if 0 <= b < 4096 else 0,
    ast.LShift: lambda a, b: a << b if 0 <= b < 4096 else 0,
    ast.RShift: lambda a, b: a >> b if b >= 0 else 0,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
_AST_CMPS: Final[dict[type[ast.cmpop], Callable[[int, int], bool]]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _arith_eval(node: ast.expr, variables: Mapping[str, str]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.Name):
        return _arith_var(variables, node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_BINOPS:
        a = _arith_eval(node.left, variables)
        b = _arith_eval(node.right, variables)
        return _AST_BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        v = _arith_eval(node.operand, variables)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return int(not v)
        if isinstance(node.op, ast.Invert):
            return ~v
    if isinstance(node, ast.BoolOp):
        values = [_arith_eval(v, variables) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare):
        left = _arith_eval(node.left, variables)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _arith_eval(right_node, variables)
            check = _AST_CMPS.get(type(op))
            if check is None or not check(left, right):
                return 0
            left = right
        return 1
    raise _Unsupported("arithmetic expression")
