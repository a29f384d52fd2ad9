"""`jobset completion bash|zsh|fish`: a shell completion script generated from the parser.

Static scripts, written from the argparse parser itself (sub-commands, each one's flags,
the values of flags with choices), so they never drift from the commands and a TAB costs no
Python start-up; argcomplete would start the CLI on every TAB. Only JobSet names (and
namespaces, contexts) are looked up live, through `jobset get -o jsonpath=...` and kubectl.

    source <(jobset completion bash)           # ~/.bashrc
    source <(jobset completion zsh)            # ~/.zshrc (bash completion under bashcompinit)
    jobset completion fish | source            # ~/.config/fish/config.fish
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["SHELLS", "Command", "add_completion_command", "commands", "script"]

SHELLS: Final = ("bash", "zsh", "fish")
# Flags whose value is a path, a namespace or a context (completed from the system).
_FILE_FLAGS: Final = frozenset(
    {"--kubeconfig", "-f", "--filename", "--faults", "--data-dir", "--cert-dir"}
)
_NAMESPACE_FLAGS: Final = frozenset({"-n", "--namespace"})
_CONTEXT_FLAGS: Final = frozenset({"--context"})
# Positionals holding JobSet names.
_JOBSET_POSITIONALS: Final = frozenset({"name", "names"})


@dataclass
class Command:
    """What completion needs of one (sub-)command."""

    name: str
    help: str = ""
    flags: list[str] = field(default_factory=list)  # every option string
    valued: dict[str, list[str]] = field(default_factory=dict)  # flag -> choices ([]: any)
    flag_help: dict[str, str] = field(default_factory=dict)
    positional: str = ""  # "jobset", "file" or ""


def _command(name: str, parser: argparse.ArgumentParser, help_text: str) -> Command:
    cmd = Command(name, help_text)
    for action in parser._actions:  # private-ok: argparse lists its actions nowhere else
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            if action.dest in _JOBSET_POSITIONALS:
                cmd.positional = "jobset"
            elif action.dest == "file":
                cmd.positional = "file"
            continue
        for opt in action.option_strings:
            cmd.flags.append(opt)
            cmd.flag_help[opt] = (action.help or "").replace("%%", "%")
            if action.nargs != 0 and not isinstance(action.const, bool):
                if action.nargs == "?":
                    continue  # --dry-run: a bare flag too
                choices = [str(c) for c in action.choices or []]
                metavar = action.metavar if isinstance(action.metavar, str) else ""
                if not choices and "|" in metavar:  # -o json|yaml|...|jsonpath=TEMPLATE
                    choices = [
                        m.split("=")[0] + ("=" if "=" in m else "") for m in metavar.split("|")
                    ]
                cmd.valued[opt] = choices
    return cmd


def commands(parser: argparse.ArgumentParser) -> tuple[Command, list[Command]]:
    """The root command and its sub-commands, in the parser's order."""
    root = _command("", parser, parser.description or "")
    subs: list[Command] = []
    for action in parser._actions:  # private-ok: argparse lists its actions nowhere else
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                subs.append(_command(name, sub, helps.get(name, "")))
    return root, subs


def _func_name(prog: str) -> str:
    return "_" + re.sub(r"[^A-Za-z0-9_]", "_", prog) + "_complete"


def _bash_subcommand_cases(subs: list[Command]) -> list[str]:
    """One `case` arm per sub-command: its flags, what its positional is, flag values."""
    lines = []
    for s in subs:
        lines.append(f"        {s.name})")
        lines.append(f'            opts="{" ".join(s.flags)}"')
        lines.append(f'            positional="{s.positional}"')
        with_choices = {f: c for f, c in s.valued.items() if c}
        if with_choices:
            lines.append('            case "$prev" in')
            for flag, choices in with_choices.items():
                lines.append(
                    f'                {flag}) COMPREPLY=($(compgen -W "{" ".join(choices)}" '
                    '-- "$cur")); return 0 ;;'
                )
            lines.append("            esac")
        others = [f for f, c in s.valued.items() if not c and f not in _FILE_FLAGS]
        others = [f for f in others if f not in _NAMESPACE_FLAGS | _CONTEXT_FLAGS]
        if others:
            lines.append(f'            case "$prev" in {"|".join(others)}) return 0 ;; esac')
        lines.append("            ;;")
    return lines


def _bash(prog: str, root: Command, subs: list[Command]) -> str:
    fn = _func_name(prog)
    names = " ".join(s.name for s in subs)
    valued_all = sorted({f for s in [root, *subs] for f in s.valued})
    lines = [
        f"# bash completion for {prog} (generated by `{prog} completion bash`)",
        f"{fn}() {{",
        '    local cur prev cmd="" i conn=() word',
        "    COMPREPLY=()",
        '    cur="${COMP_WORDS[COMP_CWORD]}"',
        '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word="${COMP_WORDS[i]}"',
        '        case "$word" in',
        "            --kubeconfig|--context|-n|--namespace)",
        '                conn+=("$word" "${COMP_WORDS[i+1]}") ;;',
        "        esac",
        '        if [[ -z "$cmd" && "$word" != -* ]]; then',
        '            case "${COMP_WORDS[i-1]}" in',
        f"                {'|'.join(valued_all) or '--'}) ;;",
        '                *) cmd="$word" ;;',
        "            esac",
        "        fi",
        "    done",
        '    if [[ -z "$cmd" ]]; then',
        '        if [[ "$cur" == -* ]]; then',
        f'            COMPREPLY=($(compgen -W "{" ".join(root.flags)}" -- "$cur"))',
        "        else",
        f'            COMPREPLY=($(compgen -W "{names}" -- "$cur"))',
        "        fi",
        "        return 0",
        "    fi",
        '    case "$prev" in',
    ]
    files = sorted({f for s in subs for f in s.valued if f in _FILE_FLAGS})
    if files:
        lines.append(f'        {"|".join(files)}) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;')
    lines += [
        "        -n|--namespace)",
        '            COMPREPLY=($(compgen -W "$(kubectl get namespaces -o name '
        '${conn[@]:+"${conn[@]}"} 2>/dev/null | sed "s,^namespace/,,")" -- "$cur"))',
        "            return 0 ;;",
        "        --context)",
        '            COMPREPLY=($(compgen -W "$(kubectl config get-contexts -o name 2>/dev/null)"'
        ' -- "$cur"))',
        "            return 0 ;;",
        "    esac",
        '    local opts="" positional=""',
        '    case "$cmd" in',
    ]
    lines += _bash_subcommand_cases(subs)
    lines += [
        "    esac",
        '    if [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        '    elif [[ "$positional" == file ]]; then',
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        '    elif [[ "$positional" == jobset ]]; then',
        f'        COMPREPLY=($(compgen -W "$({prog} get ${{conn[@]:+"${{conn[@]}}"}} '
        '-o \'jsonpath={.items[*].metadata.name}\' 2>/dev/null)" -- "$cur"))',
        "    fi",
        "    return 0",
        "}",
        f"complete -F {fn} {prog}",
        "",
    ]
    return "\n".join(lines)


def _zsh(prog: str, root: Command, subs: list[Command]) -> str:
    return (
        f"#compdef {prog}\n"
        f"# zsh completion for {prog} (generated by `{prog} completion zsh`): the bash\n"
        "# completion under zsh's bashcompinit.\n"
        "autoload -U +X compinit && { (( $+functions[compdef] )) || compinit; }\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + _bash(prog, root, subs)
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(prog: str, root: Command, subs: list[Command]) -> str:
    names = " ".join(s.name for s in subs)
    lines = [
        f"# fish completion for {prog} (generated by `{prog} completion fish`)",
        f"complete -c {prog} -f",
    ]
    for s in subs:
        lines.append(
            f"complete -c {prog} -n 'not __fish_seen_subcommand_from {names}' "
            f"-a {s.name} -d {_fish_quote(s.help.split('(')[0].strip())}"
        )
    for s in subs:
        cond = f"-n '__fish_seen_subcommand_from {s.name}'"
        done: set[str] = set()
        for flag in s.flags:
            if flag in done or flag in ("-h", "--help"):
                continue
            done.add(flag)
            spec = f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}"
            extra = ""
            if flag in s.valued:
                choices = s.valued[flag]
                if choices:
                    extra = f" -x -a {_fish_quote(' '.join(choices))}"
                elif flag in _FILE_FLAGS:
                    extra = " -r -F"
                elif flag in _NAMESPACE_FLAGS:
                    extra = (
                        " -x -a '(kubectl get namespaces -o name 2>/dev/null "
                        '| string replace namespace/ "")\''
                    )
                elif flag in _CONTEXT_FLAGS:
                    extra = " -x -a '(kubectl config get-contexts -o name 2>/dev/null)'"
                else:
                    extra = " -x"
            help_text = s.flag_help.get(flag, "").split("(")[0].strip()
            lines.append(f"complete -c {prog} {cond} {spec}{extra} -d {_fish_quote(help_text)}")
        if s.positional == "jobset":
            lines.append(
                f"complete -c {prog} {cond} -a "
                f"\"({prog} get -o 'jsonpath={{.items[*].metadata.name}}' 2>/dev/null "
                '| string split " ")"'
            )
        elif s.positional == "file":
            lines.append(f"complete -c {prog} {cond} -F")
    return "\n".join(lines) + "\n"


_GENERATORS: Final[dict[str, Callable[[str, Command, list[Command]], str]]] = {
    "bash": _bash,
    "zsh": _zsh,
    "fish": _fish,
}


def script(parser: argparse.ArgumentParser, shell: str, prog: str) -> str:
    """The completion script of `parser` (invoked as `prog`) for `shell`."""
    root, subs = commands(parser)
    return _GENERATORS[shell](prog, root, subs)


def add_completion_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    parser_factory: Callable[[], argparse.ArgumentParser],
    *,
    prog: str = "jobset",
) -> None:
    """Register `completion SHELL`; the script describes the parser `parser_factory` builds."""
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description=__doc__.split("\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=SHELLS)

    async def run(args: argparse.Namespace) -> int:
        sys.stdout.write(script(parser_factory(), args.shell, prog))
        return 0

    p.set_defaults(user_command=run)
