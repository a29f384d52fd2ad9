"""The shell's interpreter, `Shell`: runs the AST against a virtual clock, expands words and
collects the log.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from kubesim.programs.builtins import BUILTINS
from kubesim.programs.common import (
    MAX_DEPTH,
    MAX_LOG,
    MAX_STEPS,
    SHELLS,
    SILENT,
    Exit,
    Forever,
    LoopControl,
    Unsupported,
    opaque_line,
    parse_sleep,
)
from kubesim.programs.expressions import TestError, TestEval, eval_arith
from kubesim.programs.lexer import LOG_PATHS, Part, Tok, Word, lex_double_quoted
from kubesim.programs.parser import Node, parse_script

# ---------------------------------------------------------------------------------------------
# Shell: interpreter


class Shell:
    """Executes the AST against a virtual clock: sleeping advances `elapsed`, output is
    collected as the container log (stdout and stderr together, as `kubectl logs` shows)."""

    def __init__(
        self,
        variables: dict[str, str],
        default_duration: float,
        container: Mapping[str, str],
        files: Mapping[str, str] | None = None,
        mounts: Sequence[str] = (),
    ) -> None:
        self.vars = variables
        # The container's writable emptyDir mounts and the files in them (absolute path ->
        # content): the only filesystem this shell has. Writes are recorded with the
        # virtual time they happen at, for the kubelet to apply to the pod's volumes.
        self.files: dict[str, str] = dict(files or {})
        self.mounts = tuple(m.rstrip("/") or "/" for m in mounts)
        self.writes: list[tuple[float, str, str | None]] = []
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

    # -- files (emptyDir volumes only) ------------------------------------------------------

    def in_mount(self, path: str) -> bool:
        return any(path == m or path.startswith(m + "/") for m in self.mounts)

    def is_dir(self, path: str) -> bool:
        path = path.rstrip("/") or "/"
        if path in self.mounts:
            return True
        return self.in_mount(path) and any(f.startswith(path + "/") for f in self.files)

    def write_file(self, path: str, content: str | None, append: bool = False) -> bool:
        """Create, replace, append to (`content`) or remove (None) a file; False when the
        path is not in a mounted volume (the write then has no visible effect)."""
        if not self.in_mount(path):
            return False
        if content is None:
            if self.files.pop(path, None) is None:
                return True
        else:
            if append:
                content = self.files.get(path, "") + content
            self.files[path] = content
        self.writes.append((self.elapsed, path, content))
        return True

    # -- output --------------------------------------------------------------------------------

    def log_text(self) -> str:
        return "".join(self.log)

    def _to_log(self, text: str) -> None:
        if self.log_size < MAX_LOG:
            self.log.append(text[: MAX_LOG - self.log_size])
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
        if self.steps > MAX_STEPS:
            raise Forever()

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds
        if math.isinf(self.elapsed):
            raise Forever()

    # -- entry points ------------------------------------------------------------------------

    def run_argv(self, argv: list[str]) -> None:
        """Run a container's argv as the kubelet would exec it (no shell around it)."""
        self.status = self.command(argv)

    def run_script(self, src: str) -> int:
        try:
            tree = parse_script(src)
        except (Unsupported, RecursionError):
            return self.heuristic_script(src)
        try:
            self.run_node(tree)
        except LoopControl:
            pass
        return self.status

    def heuristic_script(self, src: str) -> int:
        """Fallback for scripts beyond this shell: sum the sleeps, take the last exit."""
        for m in re.finditer(r"\bsleep\s+([^\s;&|)]+)", src):
            seconds = parse_sleep(m.group(1))
            if seconds is not None:
                self.advance(seconds)
        for m in re.finditer(r"^\s*echo\s+[\"']?(.*?)[\"']?\s*$", src, re.M):
            self.out(m.group(1) + "\n")
        codes = re.findall(r"\bexit\s+(\d+)", src)
        if codes:
            raise Exit(int(codes[-1]) % 256)
        stripped = src.strip()
        return 1 if stripped.endswith("false") else 0

    # -- AST ---------------------------------------------------------------------------------

    def run_node(self, node: Node) -> int:
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
        except Unsupported as e:
            self.err(f"sh: {e}: bad substitution\n")
            self.status = 1
            return 1

    def _dispatch(self, kind: str, node: Node) -> int:
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

    def run_and_or(self, node: Node) -> int:
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
            raise Exit(status)
        return status

    def run_pipeline(self, node: Node) -> int:
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

    def run_isolated(self, node: Node) -> int:
        """Run in a subshell: variable changes and `exit` stay inside (pipeline stages,
        `( ... )`, command substitution)."""
        saved = (dict(self.vars), list(self.positional), self.errexit, self.xtrace)
        try:
            return self.run_node(node)
        except Exit as e:
            return e.code
        except LoopControl:
            return self.status
        finally:
            self.vars, self.positional, self.errexit, self.xtrace = (
                saved[0],
                saved[1],
                saved[2],
                saved[3],
            )

    def run_subshell(self, body: Node) -> int:
        return self.run_isolated(body)

    def run_background(self, node: Node) -> None:
        """`cmd &`: runs alongside; its time only counts if the script `wait`s for it."""
        start = self.elapsed
        try:
            self.run_isolated(node)
            end = self.elapsed
        except Forever:
            end = math.inf
        self.elapsed = start
        self.background_until = max(self.background_until, end)
        self.status = 0

    def run_if(self, node: Node) -> int:
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

    def _loop_body(self, body: Node) -> bool:
        """Run one iteration; False when the loop must stop (break)."""
        try:
            self.run_node(body)
        except LoopControl as ctl:
            if ctl.levels > 1:
                raise LoopControl(ctl.kind, ctl.levels - 1) from None
            return ctl.kind == "continue"
        return True

    def run_for(self, node: Node) -> int:
        _, name, words, body = node
        items = self.positional if words is None else self.expand_words(words)
        self.status = 0
        for item in items:
            self.tick()
            self.vars[name] = item
            if not self._loop_body(body):
                break
        return self.status

    def run_cfor(self, node: Node) -> int:
        _, header, body = node
        parts = header.split(";")
        if len(parts) != 3:
            raise Unsupported("for ((...))")
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

    def run_while(self, node: Node) -> int:
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

    def run_cond(self, toks: list[Tok]) -> int:
        args: list[tuple[str, bool]] = []  # (text, is_pattern)
        for kind, value in toks:
            if kind == "word":
                args.append(("".join(self.expand_word(value, split=False)), value.has_glob()))
            elif kind in ("op", "redir"):
                args.append((str(value), False))
            else:
                raise Unsupported("[[ ... ]] content")
        self.trace(["[[", *(a for a, _ in args), "]]"])
        try:
            return 0 if TestEval(args, double=True, shell=self).evaluate() else 1
        except TestError:
            return 2

    def with_redirections(self, redirs: list[tuple[str, Word]], run: Callable[[], int]) -> int:
        """Where stdout goes: to a file or /dev/null it leaves the log (into the file when
        that is in a mounted emptyDir); to stderr (`>&2`) it stays, since `kubectl logs`
        shows both streams. `< file` of a mounted file feeds stdin."""
        hide = False
        target: tuple[str, bool] | None = None  # (file, append)
        stdin = self.stdin
        for op, word in redirs:
            m = re.match(r"(\d*)(.*)", op)
            fd, bare = (m.group(1), m.group(2)) if m else ("", op)
            dest = "".join(self.expand_word(word, split=False))
            if bare in ("<", "<&", "<>"):
                if bare == "<" and dest in self.files:
                    stdin = self.files[dest]
                continue
            if bare in ("&>", "&>>") or fd in ("", "1"):
                if bare == ">&" and dest in ("1", "2"):
                    hide, target = False, None
                else:
                    hide = dest not in LOG_PATHS
                    append = bare in (">>", "&>>")
                    target = (dest, append) if hide and self.in_mount(dest) else None
                    if target is not None and not append:
                        self.write_file(dest, "")  # `>` truncates before the command runs
            elif fd == "2" and self.in_mount(dest) and bare in (">", ">>"):
                self.write_file(dest, "", append=bare == ">>")
        if not hide:
            return self._with_stdin(stdin, run)
        sink: list[str] | None = [] if target is not None else None
        self.sinks.append(sink)
        try:
            return self._with_stdin(stdin, run)
        finally:
            self.sinks.pop()
            if target is not None and sink:
                self.write_file(target[0], "".join(sink), append=True)

    def _with_stdin(self, stdin: str | None, run: Callable[[], int]) -> int:
        if stdin is self.stdin:
            return run()
        saved, self.stdin = self.stdin, stdin
        try:
            return run()
        finally:
            self.stdin = saved

    # -- simple commands ---------------------------------------------------------------------

    def run_simple(self, node: Node) -> int:
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
        builtin = BUILTINS.get(name)
        if builtin is not None:
            return builtin(self, args)
        if name in SHELLS:
            return self.run_shell(args)
        if name.startswith("python") and re.fullmatch(r"python[0-9.]*", name):
            return self.run_python(argv)
        if name in SILENT:
            return 0
        return self.opaque(argv)

    def opaque(self, argv: list[str]) -> int:
        """A command whose effect cannot be known: it succeeds, and the first one takes the
        default duration (a training script "runs for a while")."""
        if not self.opaque_ran:
            self.opaque_ran = True
            self.advance(self.default_duration)
        if self.depth == 0 and not self.sinks:
            self.err(opaque_line(self.container, argv))
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
        if self.depth >= MAX_DEPTH:
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
        except Exit as e:
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

    def expand_words(self, words: Iterable[Word]) -> list[str]:
        out: list[str] = []
        for w in words:
            out.extend(self.expand_word(w))
        return out

    def expand_word(self, word: Word, split: bool = True) -> list[str]:
        """Parameter/command/arithmetic expansion, then field splitting of unquoted results
        (no globbing: the only files are those of mounted emptyDir volumes)."""
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
        parts: list[Part] = []
        lex_double_quoted(text + '"', 0, parts)
        return "".join(self.expand_word(Word(tuple(parts)), split=False))

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
            raise Unsupported(f"${{{body}}}")
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
                    raise Exit(1)
                return value
        for prefix in ("##", "#", "%%", "%"):
            if op.startswith(prefix):
                pattern = self.expand_string(op[len(prefix) :])
                return _strip_pattern(value, pattern, prefix)
        raise Unsupported(f"${{{body}}}")

    def substitute(self, src: str) -> str:
        """`$(...)`: run in a subshell capturing stdout; time spent there still passes."""
        if self.depth >= MAX_DEPTH:
            return ""
        try:
            tree = parse_script(src)
        except Unsupported:
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
        return eval_arith(expr, self.vars)


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
