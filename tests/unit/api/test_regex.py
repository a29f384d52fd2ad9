"""Message patterns are Go RE2: same accept/reject as `regexp.Compile`, linear matching."""

from __future__ import annotations

import re
from typing import Any

import pytest

from jobset.api.regex import compile_go_regexp, go_regexp_error, message_pattern_count


@pytest.mark.parametrize(
    "pattern",
    [
        "critical",
        "^OOM.*$",
        "(?i)timeout",
        r"\pL+",
        "[[:alpha:]]+",
        "(?P<code>[0-9]+)",
        "(?<code>[0-9]+)",  # Go 1.22+ accepts this form too
        "a{1000}",
        r"\\C",  # an escaped backslash followed by C is two literals
        "(a+)+$",
    ],
)
def test_patterns_go_compiles_are_accepted(pattern: str) -> None:
    assert go_regexp_error(pattern) is None
    assert compile_go_regexp(pattern) is not None


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("(?=ahead)", "perl operator"),  # lookaround: Python re only
        (r"(a)\1", "escape"),  # backreferences: Python re only
        ("a++", "repetition"),  # possessive: Python re (3.11) only
        ("a{1001}", "repetition size"),
        (r"\C", r"\C"),  # RE2 itself has it; Go refuses it
        ("[", "missing ]"),
    ],
    ids=[
        "lookahead",
        "backreference",
        "possessive repetition",
        "repetition over 1000",
        "escape C (RE2 has it, Go refuses it)",
        "unclosed class",
    ],
)
def test_patterns_go_refuses_are_refused(pattern: str, fragment: str) -> None:
    error = go_regexp_error(pattern)
    assert error is not None and fragment in error
    assert compile_go_regexp(pattern) is None


def test_python_only_syntax_really_differs() -> None:
    # Guards the cases above: Python's re accepts what Go (and so we) refuse.
    for pattern in ("(?=ahead)", r"(a)\1", "a++"):
        re.compile(pattern)


def test_catastrophic_pattern_is_answered_without_backtracking() -> None:
    # Python's re needs about 2**40 steps here; RE2 answers in one pass. Asserting the
    # answer (not a time): the test cannot finish at all with a backtracking engine.
    compiled = compile_go_regexp("(a+)+$")
    assert compiled is not None
    assert compiled.search("a" * 40 + "!") is None
    assert compiled.search("a" * 40) is not None


def test_a_policy_sized_set_of_patterns_stays_compiled() -> None:
    """6,000 patterns (3,000 rules x 2, as large as one object allows) walked in order twice:
    the second walk compiles nothing (an LRU cache smaller than the set would recompile all)."""
    from jobset.api.regex import COMPILED_CACHE_SIZE

    patterns = [f"^never-{i}-[a-z]+$" for i in range(6000)]
    assert len(patterns) <= COMPILED_CACHE_SIZE
    compile_go_regexp.cache_clear()
    for p in patterns:
        compile_go_regexp(p)
    misses = compile_go_regexp.cache_info().misses
    for p in patterns:
        compile_go_regexp(p)
    assert compile_go_regexp.cache_info().misses == misses


def test_message_patterns_are_counted_over_every_rule_and_bad_shapes_count_zero() -> None:
    rules = [
        {"onJobFailureMessagePatterns": ["a", "b"]},
        {},
        {"onJobFailureMessagePatterns": ["c"]},
    ]
    assert message_pattern_count({"spec": {"failurePolicy": {"rules": rules}}}) == 3
    shapes: tuple[Any, ...] = ({}, {"spec": []}, {"spec": {"failurePolicy": {"rules": "x"}}}, [])
    for shape in shapes:
        assert message_pattern_count(shape) == 0


def test_the_admission_check_fills_the_cache_the_controller_matches_from() -> None:
    pattern = "^admission-warms-the-cache-[0-9]+$"
    before = compile_go_regexp.cache_info()
    assert go_regexp_error(pattern) is None
    assert compile_go_regexp.cache_info().currsize == before.currsize + 1
    compile_go_regexp(pattern)
    assert compile_go_regexp.cache_info().hits == before.hits + 1
