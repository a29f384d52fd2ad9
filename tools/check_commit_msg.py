"""A commit message's form: the subject at most 72 characters, in the imperative, no
trailing period, a blank line before the body. The pre-commit `commit-msg` hook runs it.

    python tools/check_commit_msg.py FILE     # the message git is about to record

The imperative is checked on the first word only, by its ending: "Added", "Adding" and
"Adds" are refused, "Add" passes. A heuristic: it catches the common slips, not every verb.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

MAX_SUBJECT = 72
# First words that end like a verb's past, gerund or third person but are not one of those.
_NOT_VERB_FORMS = frozenset({"Bias", "Focus", "Process", "Pass", "Address", "Access", "Express"})
# Git's own subjects, left as git writes them.
_GIT_SUBJECTS = ("Merge ", "Revert ", "fixup! ", "squash! ", "amend! ")


def problems(message: str) -> list[str]:
    """What is wrong with `message` (comment lines dropped, as git drops them)."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ["the message is empty"]
    subject = lines[0].rstrip()
    if subject.startswith(_GIT_SUBJECTS):
        return []
    found: list[str] = []
    if len(subject) > MAX_SUBJECT:
        found.append(f"the subject is {len(subject)} characters (at most {MAX_SUBJECT})")
    if subject.endswith("."):
        found.append("the subject ends with a period")
    first = re.split(r"[\s:]", subject, maxsplit=1)[0]
    if first[:1].islower():
        found.append(f"the subject starts in lower case ({first!r}): start with the verb")
    elif first not in _NOT_VERB_FORMS and re.search(r"(ed|ing|[^s]s)$", first):
        found.append(f"the subject is not in the imperative ({first!r}): 'Add', not 'Adds'")
    if len(lines) > 1 and lines[1].strip():
        found.append("no blank line between the subject and the body")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        print("usage: check_commit_msg.py FILE", file=sys.stderr)
        return 2
    found = problems(Path(args[0]).read_text())
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
