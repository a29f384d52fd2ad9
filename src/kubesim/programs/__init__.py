"""What a simulated container "does", worked out from its command without running it.

- `programs.py` - `program_for(container)` and the `Program` it returns.
"""

from kubesim.programs.programs import Program, program_for

__all__ = ["Program", "program_for"]
