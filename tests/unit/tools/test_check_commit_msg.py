"""The commit-msg hook's checks (`tools/check_commit_msg.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.tools import load_tool

check = load_tool("check_commit_msg")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param("Serve cluster DNS on the gateway\n\nWhy it matters.\n", [], id="good"),
        pytest.param("Add x\n# a comment git drops\n", [], id="comment-lines-ignored"),
        pytest.param("Merge branch 'main' into docs\n", [], id="git-merge-subject"),
        pytest.param(
            "Add " + "x" * 69 + "\n",
            ["the subject is 73 characters (at most 72)"],
            id="subject-73-characters",
        ),
        pytest.param(
            "Added the check\n",
            ["the subject is not in the imperative ('Added'): 'Add', not 'Adds'"],
            id="past-tense",
        ),
        pytest.param(
            "Adds the check\n",
            ["the subject is not in the imperative ('Adds'): 'Add', not 'Adds'"],
            id="third-person",
        ),
        pytest.param(
            "docs: the check\n",
            ["the subject starts in lower case ('docs'): start with the verb"],
            id="lower-case-prefix",
        ),
        pytest.param("Fix the check.\n", ["the subject ends with a period"], id="trailing-period"),
        pytest.param(
            "Fix the check\nwhy\n",
            ["no blank line between the subject and the body"],
            id="no-blank-line",
        ),
        pytest.param("\n# only comments\n", ["the message is empty"], id="empty"),
        pytest.param("Address the review\n", [], id="verb-ending-in-ss"),
    ],
)
def test_problems(message: str, expected: list[str]) -> None:
    assert check.problems(message) == expected


def test_main_fails_on_a_bad_message(tmp_path: Path) -> None:
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.write_text("Added things.\n")
    good.write_text("Add things\n")
    assert check.main([str(bad)]) == 1
    assert check.main([str(good)]) == 0
