"""What a simulated container "does", worked out from its command without running it.

- `programs.py` - `program_for(container)` and the `Program` it returns: the `SIM_*` overrides,
  Kubernetes' `$(VAR)` expansion, `python -c` and opaque commands, and the cached call into the
  shell below.
- A small shell for `sh -c` scripts: `lexer.py` (words, quoting, operators), `parser.py` (an AST
  of tagged tuples), `interpreter.py` (`Shell`: runs the AST on a virtual clock, expands words,
  collects the log), `builtins.py` (`echo`, `printf`, `sleep`, `seq`, `timeout`, ...),
  `expressions.py` (`test` / `[ ]` / `[[ ]]` and `$(( ))`), `shellstate.py` (the shell as
  those two see it, so they need not import the interpreter), `common.py` (limits and the
  exceptions that carry `exit`, `break` and "runs forever").
"""

from kubesim.programs.programs import Program, program_for

__all__ = ["Program", "program_for"]
