"""Unit tests of the simulator's CEL package (`kubesim.machinery.cel`), without a server.

The calling convention is the one of the CRD validation code (`kubesim.machinery.schema`):
`compile_expression(rule)` raises `ValueError` for a rule that cannot be compiled (syntax, or an
unknown variable or function, as cel-go's checker at CRD creation), and
`CelProgram.evaluate({"self": ..., "oldSelf": ...})` takes CEL values (`celpy.adapter.json_to_cel`
of the object; `Optional` for `optionalOldSelf`; `SetList` / `MapList` for list types) and raises
`CelError` on an evaluation error, with `overload=True` for "no such overload" (type) errors.

Expected values are those of kube-apiserver's CEL libraries (k8s.io/apiserver/pkg/cel/library)
and cel-go's extensions. Of the functions the test plan listed, these are missing or behave
differently here, so the tests below do not assert the Kubernetes behaviour for them:

- The optional-field syntax `self.?a` / `m[?k]` is not supported: such a rule does not compile
  (the package docstring says celpy's grammar cannot parse it).
- `matches` with an invalid or non-RE2 pattern (a lookahead) fails with celpy's "match error"
  instead of cel-go's "error parsing regexp: ..."; `find` / `findAll` say "error parsing regexp"
  but quote RE2's message as a Python bytes repr. An invalid constant pattern fails at evaluation,
  not when the rule is compiled.
- `format` leaves clauses it does not know (`%q`, widths such as `%5d`) in the output where
  cel-go reports "unrecognized formatting clause".
- `ip(...)` / `int(...)` parse errors quote the argument as a Python repr (`StringType('1.2.3')`);
  `cidr.containsIP(1)` is a parse error rather than "no such overload";
  `quantity.isGreaterThan/isLessThan/compareTo` also accept an int argument (Kubernetes: only a
  quantity).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from celpy import celtypes
from celpy.adapter import json_to_cel

from kubesim.machinery.cel import (
    CelError,
    CelProgram,
    LazyVariables,
    MapList,
    Optional,
    SetList,
    compile_expression,
    re2_compile,
)


def run(expression: str, **variables: Any) -> Any:
    """Compile and evaluate `expression`; JSON-like variables are converted to CEL values."""
    bound = {
        k: v if isinstance(v, Optional | SetList | MapList) else json_to_cel(v)
        for k, v in variables.items()
    }
    return compile_expression(expression).evaluate(bound)


def failure(expression: str, **variables: Any) -> CelError:
    with pytest.raises(CelError) as info:
        run(expression, **variables)
    return info.value


def check(expression: str, expected: Any) -> None:
    result = run(expression)
    assert result == expected, f"{expression} = {result!r}"
    if isinstance(expected, bool):  # a CEL bool, not an int that happens to equal 0 or 1
        assert isinstance(result, celtypes.BoolType), f"{expression} = {result!r}"


# ---------------------------------------------------------------------------------- compiler


@pytest.mark.parametrize(
    ("expression", "uses_old_self"),
    [
        ("self == oldSelf", True),
        ("has(oldSelf.a) || self.a > 0", True),
        ("self.a > 0", False),
    ],
    ids=["self == oldSelf", "has(oldSelf.a) || self.a > 0", "self.a > 0"],
)
def test_compile_returns_a_program_that_knows_whether_it_is_a_transition_rule(
    expression: str, uses_old_self: bool
) -> None:
    program = compile_expression(expression)
    assert isinstance(program, CelProgram)
    assert program.source == expression
    assert program.uses_old_self is uses_old_self


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("nope('x')", "undeclared reference to 'nope'"),
        ("'x'.nope()", "undeclared reference to 'nope'"),
        ("foo == 1", "undeclared reference to 'foo'"),
        ("", "rule is not specified"),
        ("  ", "rule is not specified"),
    ],
    ids=["nope('x')", "'x'.nope()", "foo == 1", "''", "'  '"],
)
def test_unknown_names_and_empty_rules_fail_at_compile_time(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        compile_expression(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "self ==",
        "self.a +",
        "self.?a",  # cel-go's optional field selection: not supported here
        "self.?a.orValue(0) == 0",
        "{'a': 1}[?'a']",
    ],
)
def test_syntax_errors_fail_at_compile_time(expression: str) -> None:
    with pytest.raises(ValueError, match=r"^compilation failed: "):
        compile_expression(expression)


def test_variables_are_declared_by_the_caller() -> None:
    program = compile_expression("x + 1 == 2", variables=("x",))
    assert program.evaluate({"x": celtypes.IntType(1)}) == True  # noqa: E712
    with pytest.raises(ValueError, match="undeclared reference to 'self'"):
        compile_expression("self == 1", variables=("x",))


def test_a_program_is_evaluated_many_times_with_different_bindings() -> None:
    program = compile_expression("self.replicas <= self.max")
    assert [
        bool(program.evaluate({"self": json_to_cel({"replicas": r, "max": 3})})) for r in (1, 3, 4)
    ] == [True, True, False]


# ---------------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'a,b'.split(',')", ["a", "b"]),
        ("'a,b,c'.split(',', 2)", ["a", "b,c"]),
        ("'a,b'.split(',', 0)", []),
        ("'a,b'.split(',', -1)", ["a", "b"]),
        ("'abc'.split('')", ["a", "b", "c"]),
        ("'HeLLo'.lowerAscii()", "hello"),
        ("'HeLLo'.upperAscii()", "HELLO"),
        ("'ÀB'.lowerAscii()", "Àb"),  # ASCII letters only
        ("'hello'.indexOf('l')", 2),
        ("'hello'.indexOf('l', 3)", 3),
        ("'hello'.indexOf('z')", -1),
        ("'hello'.indexOf('')", 0),
        ("'hello'.lastIndexOf('l')", 3),
        ("'abcab'.lastIndexOf('ab', 2)", 0),
        ("'héllo'.indexOf('l')", 2),  # code points, not bytes
        ("'hello'.substring(1)", "ello"),
        ("'hello'.substring(1, 3)", "el"),
        ("'héllo'.substring(1, 3)", "él"),
        ("'hello'.charAt(1)", "e"),
        ("'hello'.charAt(5)", ""),
        ("'  x '.trim()", "x"),
        ("'aaa'.replace('a', 'b')", "bbb"),
        ("'aaa'.replace('a', 'b', 2)", "bba"),
        ("['a', 'b'].join('-')", "a-b"),
        ("['a', 'b'].join()", "ab"),
        ("'abc'.reverse()", "cba"),
        ("'abc'.contains('b')", True),
        ("strings.quote('a\"b')", '"a\\"b"'),
    ],
    ids=[
        "'a,b'.split(',')",
        "'a,b,c'.split(',', 2)",
        "'a,b'.split(',', 0)",
        "'a,b'.split(',', -1)",
        "'abc'.split('')",
        "'HeLLo'.lowerAscii()",
        "'HeLLo'.upperAscii()",
        "'ÀB'.lowerAscii()",
        "'hello'.indexOf('l')",
        "'hello'.indexOf('l', 3)",
        "'hello'.indexOf('z')",
        "'hello'.indexOf('')",
        "'hello'.lastIndexOf('l')",
        "'abcab'.lastIndexOf('ab', 2)",
        "'héllo'.indexOf('l')",
        "'hello'.substring(1)",
        "'hello'.substring(1, 3)",
        "'héllo'.substring(1, 3)",
        "'hello'.charAt(1)",
        "'hello'.charAt(5)",
        "'  x '.trim()",
        "'aaa'.replace('a', 'b')",
        "'aaa'.replace('a', 'b', 2)",
        "['a', 'b'].join('-')",
        "['a', 'b'].join()",
        "'abc'.reverse()",
        "'abc'.contains('b')",
        "strings.quote('a\"b')",
    ],
)
def test_string_functions(expression: str, expected: Any) -> None:
    check(expression, expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("'hello'.indexOf('l', 9)", "index out of range: 9"),
        ("'ab'.lastIndexOf('b', 5)", "index out of range: 5"),
        ("'hello'.substring(1, 9)", "index out of range: 9"),
        ("'ab'.substring(-1)", "index out of range: -1"),
        ("'hello'.substring(3, 1)", "invalid substring range. start: 3, end: 1"),
        ("'ab'.charAt(-1)", "index out of range: -1"),
    ],
    ids=[
        "'hello'.indexOf('l', 9)",
        "'ab'.lastIndexOf('b', 5)",
        "'hello'.substring(1, 9)",
        "'ab'.substring(-1)",
        "'hello'.substring(3, 1)",
        "'ab'.charAt(-1)",
    ],
)
def test_string_index_errors(expression: str, message: str) -> None:
    error = failure(expression)
    assert (error.message, error.overload) == (message, False)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'%s has %d items'.format(['list', 3])", "list has 3 items"),
        ("'%s %s %s'.format([null, true, 1.5])", "null true 1.5"),
        ("'%s'.format([[1, 'a']])", "[1, a]"),
        ("'%s'.format([{'b': 1, 'a': true}])", "{a: true, b: 1}"),
        ("'%.2f'.format([1.2345])", "1.23"),
        ("'%f'.format([1.5])", "1.500000"),
        ("'%e'.format([1234.5])", "1.234500e+03"),
        ("'%x %X'.format([255, 'hi'])", "ff 6869"),
        ("'%o %b'.format([8, 5])", "10 101"),
        ("'100%%'.format([])", "100%"),
    ],
    ids=[
        "'%s has %d items'.format(['list', 3])",
        "'%s %s %s'.format([null, true, 1.5])",
        "'%s'.format([[1, 'a']])",
        "'%s'.format([{'b': 1, 'a': true}])",
        "'%.2f'.format([1.2345])",
        "'%f'.format([1.5])",
        "'%e'.format([1234.5])",
        "'%x %X'.format([255, 'hi'])",
        "'%o %b'.format([8, 5])",
        "'100%%'.format([])",
    ],
)
def test_string_format(expression: str, expected: str) -> None:
    check(expression, expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("'%s %s'.format(['a'])", "index 1 out of range"),
        ("'%d'.format(['x'])", "error during formatting: invalid argument for %d"),
        ("'%f'.format(['x'])", "error during formatting: invalid argument for %f"),
    ],
    ids=["'%s %s'.format(['a'])", "'%d'.format(['x'])", "'%f'.format(['x'])"],
)
def test_string_format_errors(expression: str, message: str) -> None:
    assert failure(expression).message.startswith(message)


# ---------------------------------------------------------------------------------- lists


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("[1, 2, 3].isSorted()", True),
        ("[1, 2, 2].isSorted()", True),
        ("[3, 1].isSorted()", False),
        ("['a', 'b'].isSorted()", True),
        ("['b', 'a'].isSorted()", False),
        ("[].isSorted()", True),
        ("[1, 2, 3].sum()", 6),
        ("[1.5, 2.5].sum()", 4.0),
        ("[1u, 2u].sum()", 3),
        ("[].sum()", 0),
        ("[4, 2, 7].min()", 2),
        ("[1, 5, 3].max()", 5),
        ("['b', 'a', 'c'].min()", "a"),
        ("[1, 2.5].max()", 2.5),
        ("[1, 2, 1].indexOf(1)", 0),
        ("[1, 2, 1].lastIndexOf(1)", 2),
        ("[1, 2].indexOf(3)", -1),
        ("[1, 2].lastIndexOf(3)", -1),
        ("[[1], [2]].indexOf([2])", 1),
    ],
    ids=[
        "[1, 2, 3].isSorted()",
        "[1, 2, 2].isSorted()",
        "[3, 1].isSorted()",
        "['a', 'b'].isSorted()",
        "['b', 'a'].isSorted()",
        "[].isSorted()",
        "[1, 2, 3].sum()",
        "[1.5, 2.5].sum()",
        "[1u, 2u].sum()",
        "[].sum()",
        "[4, 2, 7].min()",
        "[1, 5, 3].max()",
        "['b', 'a', 'c'].min()",
        "[1, 2.5].max()",
        "[1, 2, 1].indexOf(1)",
        "[1, 2, 1].lastIndexOf(1)",
        "[1, 2].indexOf(3)",
        "[1, 2].lastIndexOf(3)",
        "[[1], [2]].indexOf([2])",
    ],
)
def test_kubernetes_list_library(expression: str, expected: Any) -> None:
    check(expression, expected)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("[1, 2, 3].slice(1, 2)", [2]),
        ("[[1], [2, [3]]].flatten()", [1, 2, [3]]),
        ("[[1], [2, [3]]].flatten(2)", [1, 2, 3]),
        ("[1, 2, 1].distinct()", [1, 2]),
        ("[3, 1, 2].sort()", [1, 2, 3]),
        ("[1, 2].reverse()", [2, 1]),
        ("[1, 2].contains(2)", True),
    ],
    ids=[
        "[1, 2, 3].slice(1, 2)",
        "[[1], [2, [3]]].flatten()",
        "[[1], [2, [3]]].flatten(2)",
        "[1, 2, 1].distinct()",
        "[3, 1, 2].sort()",
        "[1, 2].reverse()",
        "[1, 2].contains(2)",
    ],
)
def test_cel_go_list_extensions(expression: str, expected: Any) -> None:
    check(expression, expected)


def test_list_functions_on_self() -> None:
    doc = {"sizes": [3, 1, 2], "names": ["a", "b"]}
    assert run("self.sizes.sum() == 6 && self.sizes.max() == 3", self=doc) == True  # noqa: E712
    assert run("self.sizes.isSorted()", self=doc) == False  # noqa: E712
    assert run("self.names.indexOf('b')", self=doc) == 1


@pytest.mark.parametrize(
    ("expression", "message", "overload"),
    [
        ("[].max()", "max called on empty list", False),
        ("[].min()", "min called on empty list", False),
        ("[1, 2, 3].slice(2, 9)", "cannot slice(2, 9) a list of size 3", False),
        ("[1, 'a'].sum()", "no such overload", True),
        ("[1, 'a'].isSorted()", "no such overload", True),
        ("[1, 'a'].max()", "no such overload", True),
        ("['a', 1].sort()", "no such overload", True),
    ],
    ids=[
        "[].max()",
        "[].min()",
        "[1, 2, 3].slice(2, 9)",
        "[1, 'a'].sum()",
        "[1, 'a'].isSorted()",
        "[1, 'a'].max()",
        "['a', 1].sort()",
    ],
)
def test_list_errors(expression: str, message: str, overload: bool) -> None:
    error = failure(expression)
    assert (error.message, error.overload) == (message, overload)


# ---------------------------------------------------------------------------------- sets


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sets.contains([1, 2, 3], [1, 3])", True),
        ("sets.contains([1, 2], [3])", False),
        ("sets.contains([1], [])", True),
        ("sets.contains([], [1])", False),
        ("sets.contains([1.0], [1])", True),  # heterogeneous numeric equality
        ("sets.equivalent([1, 2], [2, 1])", True),
        ("sets.equivalent([1, 1, 2], [2, 1])", True),
        ("sets.equivalent([1, 2], [1])", False),
        ("sets.intersects([1], [1, 2])", True),
        ("sets.intersects([1], [2])", False),
        ("sets.intersects([], [])", False),
    ],
    ids=[
        "sets.contains([1, 2, 3], [1, 3])",
        "sets.contains([1, 2], [3])",
        "sets.contains([1], [])",
        "sets.contains([], [1])",
        "sets.contains([1.0], [1])",
        "sets.equivalent([1, 2], [2, 1])",
        "sets.equivalent([1, 1, 2], [2, 1])",
        "sets.equivalent([1, 2], [1])",
        "sets.intersects([1], [1, 2])",
        "sets.intersects([1], [2])",
        "sets.intersects([], [])",
    ],
)
def test_sets(expression: str, expected: bool) -> None:
    check(expression, expected)


# ---------------------------------------------------------------------------------- regex


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'abc123def'.find('[0-9]+')", "123"),
        ("'abc'.find('z')", ""),
        ("'a1b22'.findAll('[0-9]+')", ["1", "22"]),
        ("'a1b2c3'.findAll('[0-9]', 2)", ["1", "2"]),
        ("'a1b2c3'.findAll('[0-9]', 0)", []),
        ("'a1b2c3'.findAll('[0-9]', -1)", ["1", "2", "3"]),
        ("'abc'.findAll('x')", []),
        ("'worker-1'.matches('^worker-[0-9]+$')", True),
        ("'abc'.matches('(?i)ABC')", True),
        ("'xabcx'.matches('abc')", True),  # unanchored, as RE2's partial match
    ],
    ids=[
        "'abc123def'.find('[0-9]+')",
        "'abc'.find('z')",
        "'a1b22'.findAll('[0-9]+')",
        "'a1b2c3'.findAll('[0-9]', 2)",
        "'a1b2c3'.findAll('[0-9]', 0)",
        "'a1b2c3'.findAll('[0-9]', -1)",
        "'abc'.findAll('x')",
        "'worker-1'.matches('^worker-[0-9]+$')",
        "'abc'.matches('(?i)ABC')",
        "'xabcx'.matches('abc')",
    ],
)
def test_regex_functions(expression: str, expected: Any) -> None:
    check(expression, expected)


LOOKAHEAD = "a(?=b)"  # valid for Python's `re`, not for RE2 (Go's regexp)


def test_matches_is_re2_so_a_lookahead_is_an_error() -> None:
    assert re.compile(LOOKAHEAD).search("ab")  # the pattern would work with Python's re
    error = failure(f"'ab'.matches('{LOOKAHEAD}')")
    assert not error.overload


@pytest.mark.parametrize("call", [f"find('{LOOKAHEAD}')", f"findAll('{LOOKAHEAD}')", "find('[')"])
def test_find_reports_invalid_re2_patterns(call: str) -> None:
    error = failure(f"'ab'.{call}")
    assert error.message.startswith("error parsing regexp: ") and not error.overload


def test_re2_compile() -> None:
    assert re2_compile("^[a-z]+$").search("abc")
    with pytest.raises(ValueError):
        re2_compile(LOOKAHEAD)
    with pytest.raises(ValueError):
        re2_compile("(a)\\1")  # backreferences: Python only


# ---------------------------------------------------------------------------------- quantity


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("quantity('1Gi').isGreaterThan(quantity('1024Mi'))", False),
        ("quantity('1Gi').isGreaterThan(quantity('1000Mi'))", True),
        ("quantity('1Mi').isGreaterThan(quantity('1M'))", True),
        ("quantity('1Gi').isLessThan(quantity('2Gi'))", True),
        ("quantity('1Gi') == quantity('1024Mi')", True),
        ("quantity('1M') == quantity('1000k')", True),
        ("quantity('1Gi').compareTo(quantity('1024Mi'))", 0),
        ("quantity('1').compareTo(quantity('2'))", -1),
        ("quantity('2').compareTo(quantity('1500m'))", 1),
        ("quantity('1Gi').add(quantity('1Gi')).asInteger()", 2 * 2**30),
        ("quantity('1Gi').add(5).asInteger()", 2**30 + 5),
        ("quantity('2').sub(3).asInteger()", -1),
        ("quantity('100m').add(quantity('900m')).isInteger()", True),
        ("quantity('500m').isInteger()", False),
        ("quantity('1k').asInteger()", 1000),
        ("quantity('1e3').asInteger()", 1000),
        ("quantity('500m').asApproximateFloat()", 0.5),
        ("quantity('-1').sign()", -1),
        ("quantity('1Gi').sub(quantity('1Gi')).sign()", 0),
        ("isQuantity('1.5Gi')", True),
        ("isQuantity('1GB')", False),
    ],
    ids=[
        "quantity('1Gi').isGreaterThan(quantity('1024Mi'))",
        "quantity('1Gi').isGreaterThan(quantity('1000Mi'))",
        "quantity('1Mi').isGreaterThan(quantity('1M'))",
        "quantity('1Gi').isLessThan(quantity('2Gi'))",
        "quantity('1Gi') == quantity('1024Mi')",
        "quantity('1M') == quantity('1000k')",
        "quantity('1Gi').compareTo(quantity('1024Mi'))",
        "quantity('1').compareTo(quantity('2'))",
        "quantity('2').compareTo(quantity('1500m'))",
        "quantity('1Gi').add(quantity('1Gi')).asInteger()",
        "quantity('1Gi').add(5).asInteger()",
        "quantity('2').sub(3).asInteger()",
        "quantity('100m').add(quantity('900m')).isInteger()",
        "quantity('500m').isInteger()",
        "quantity('1k').asInteger()",
        "quantity('1e3').asInteger()",
        "quantity('500m').asApproximateFloat()",
        "quantity('-1').sign()",
        "quantity('1Gi').sub(quantity('1Gi')).sign()",
        "isQuantity('1.5Gi')",
        "isQuantity('1GB')",
    ],
)
def test_quantity(expression: str, expected: Any) -> None:
    check(expression, expected)


@pytest.mark.parametrize(
    ("expression", "message", "overload"),
    [
        ("quantity('abc')", "quantities must match the regular expression: abc", False),
        ("quantity('500m').asInteger()", "cannot convert value to integer", False),
        ("quantity('9999999999999999999').asInteger()", "cannot convert value to integer", False),
        ("quantity(1)", "no such overload", True),
        ("quantity('1').add('x')", "no such overload", True),
    ],
    ids=[
        "quantity('abc')",
        "quantity('500m').asInteger()",
        "quantity('9999999999999999999').asInteger()",
        "quantity(1)",
        "quantity('1').add('x')",
    ],
)
def test_quantity_errors(expression: str, message: str, overload: bool) -> None:
    error = failure(expression)
    assert (error.message, error.overload) == (message, overload)


# ---------------------------------------------------------------------------------- URL, IP, CIDR


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("url('https://a/b').getHost()", "a"),
        ("url('https://user@a:8080/b').getHost()", "a:8080"),
        ("url('https://a:8080/b').getHostname()", "a"),
        ("url('https://[::1]:80/').getHost()", "[::1]:80"),
        ("url('https://[::1]:80/').getHostname()", "::1"),
        ("url('https://a/b').getScheme()", "https"),
        ("url('https://a:8080/b').getPort()", "8080"),
        ("url('https://a/b').getPort()", ""),
        ("url('https://a/b%20c').getEscapedPath()", "/b%20c"),
        ("url('https://a/b?x=1&x=2&y=').getQuery()", {"x": ["1", "2"], "y": [""]}),
        ("url('/relative/path').getHost()", ""),
        ("isURL('https://example.com/x')", True),
        ("isURL('ht tp://x')", False),
    ],
    ids=[
        "url('https://a/b').getHost()",
        "url('https://user@a:8080/b').getHost()",
        "url('https://a:8080/b').getHostname()",
        "url('https://[::1]:80/').getHost()",
        "url('https://[::1]:80/').getHostname()",
        "url('https://a/b').getScheme()",
        "url('https://a:8080/b').getPort()",
        "url('https://a/b').getPort()",
        "url('https://a/b%20c').getEscapedPath()",
        "url('https://a/b?x=1&x=2&y=').getQuery()",
        "url('/relative/path').getHost()",
        "isURL('https://example.com/x')",
        "isURL('ht tp://x')",
    ],
)
def test_url(expression: str, expected: Any) -> None:
    check(expression, expected)


def test_url_parse_error() -> None:
    error = failure("url('not a url')")
    assert error.message == "URL parse error during conversion from string: not a url"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("ip('10.0.0.1').family()", 4),
        ("ip('::1').family()", 6),
        ("ip('::1').isLoopback()", True),
        ("ip('127.0.0.1').isLoopback()", True),
        ("ip('0.0.0.0').isUnspecified()", True),
        ("ip('169.254.1.1').isLinkLocalUnicast()", True),
        ("ip('224.0.0.1').isLinkLocalMulticast()", True),
        ("ip('8.8.8.8').isGlobalUnicast()", True),
        ("ip('127.0.0.1').isGlobalUnicast()", False),
        ("ip('10.0.0.1') == ip('10.0.0.1')", True),
        ("string(ip('10.0.0.1'))", "10.0.0.1"),
        ("isIP('::1')", True),
        ("isIP('1.2.3')", False),
        ("isIP('::ffff:1.2.3.4')", False),  # IPv4-mapped IPv6: rejected by Kubernetes
    ],
    ids=[
        "ip('10.0.0.1').family()",
        "ip('::1').family()",
        "ip('::1').isLoopback()",
        "ip('127.0.0.1').isLoopback()",
        "ip('0.0.0.0').isUnspecified()",
        "ip('169.254.1.1').isLinkLocalUnicast()",
        "ip('224.0.0.1').isLinkLocalMulticast()",
        "ip('8.8.8.8').isGlobalUnicast()",
        "ip('127.0.0.1').isGlobalUnicast()",
        "ip('10.0.0.1') == ip('10.0.0.1')",
        "string(ip('10.0.0.1'))",
        "isIP('::1')",
        "isIP('1.2.3')",
        "isIP('::ffff:1.2.3.4')",
    ],
)
def test_ip(expression: str, expected: Any) -> None:
    check(expression, expected)


@pytest.mark.parametrize("text", ["1.2.3", "::ffff:1.2.3.4", "fe80::1%eth0"])
def test_ip_parse_errors(text: str) -> None:
    error = failure(f"ip('{text}')")
    assert "parse error" in error.message and not error.overload


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", True),
        ("cidr('10.0.0.0/8').containsIP('11.1.2.3')", False),
        ("cidr('10.0.0.0/8').containsIP(ip('::1'))", False),
        ("cidr('10.0.0.0/8').containsCIDR(cidr('10.1.0.0/16'))", True),
        ("cidr('10.0.0.0/8').containsCIDR('10.0.0.0/7')", False),
        ("cidr('10.0.0.0/8').prefixLength()", 8),
        ("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')", True),
        ("cidr('10.1.2.3/8').ip() == ip('10.1.2.3')", True),
        ("string(cidr('10.1.2.3/8'))", "10.1.2.3/8"),
        ("isCIDR('fd00::/64')", True),
        ("isCIDR('10.0.0.0/33')", False),
        ("isCIDR('10.0.0.0')", False),
    ],
    ids=[
        "cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))",
        "cidr('10.0.0.0/8').containsIP('11.1.2.3')",
        "cidr('10.0.0.0/8').containsIP(ip('::1'))",
        "cidr('10.0.0.0/8').containsCIDR(cidr('10.1.0.0/16'))",
        "cidr('10.0.0.0/8').containsCIDR('10.0.0.0/7')",
        "cidr('10.0.0.0/8').prefixLength()",
        "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
        "cidr('10.1.2.3/8').ip() == ip('10.1.2.3')",
        "string(cidr('10.1.2.3/8'))",
        "isCIDR('fd00::/64')",
        "isCIDR('10.0.0.0/33')",
        "isCIDR('10.0.0.0')",
    ],
)
def test_cidr(expression: str, expected: Any) -> None:
    check(expression, expected)


# ---------------------------------------------------------------------------------- optionals


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("optional.of(1).hasValue()", True),
        ("optional.none().hasValue()", False),
        ("optional.of(1).value()", 1),
        ("optional.of(1).orValue(2)", 1),
        ("optional.none().orValue('d')", "d"),
        ("optional.ofNonZeroValue('').hasValue()", False),
        ("optional.ofNonZeroValue(0).hasValue()", False),
        ("optional.ofNonZeroValue([1]).value()", [1]),
        ("optional.of(1) == optional.of(1)", True),
        ("optional.of(1) == optional.none()", False),
        ("optional.none() == optional.none()", True),
    ],
    ids=[
        "optional.of(1).hasValue()",
        "optional.none().hasValue()",
        "optional.of(1).value()",
        "optional.of(1).orValue(2)",
        "optional.none().orValue('d')",
        "optional.ofNonZeroValue('').hasValue()",
        "optional.ofNonZeroValue(0).hasValue()",
        "optional.ofNonZeroValue([1]).value()",
        "optional.of(1) == optional.of(1)",
        "optional.of(1) == optional.none()",
        "optional.none() == optional.none()",
    ],
)
def test_optionals(expression: str, expected: Any) -> None:
    check(expression, expected)


@pytest.mark.parametrize(
    ("expression", "message", "overload"),
    [
        ("optional.none().value()", "optional.none() dereference", False),
        ("optional.of({'a': 1}).a", "type 'optional_type' does not support field selection", False),
        ("(1).orValue(0)", "no such overload", True),
    ],
    ids=["optional.none().value()", "optional.of({'a': 1}).a", "(1).orValue(0)"],
)
def test_optional_errors(expression: str, message: str, overload: bool) -> None:
    error = failure(expression)
    assert (error.message, error.overload) == (message, overload)


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        (Optional.none(), True),
        (Optional.of(json_to_cel(2)), True),
        (Optional.of(json_to_cel(5)), False),
    ],
    ids=["create: no old value", "old value kept", "old value lowered"],
)
def test_optional_old_self_rule(old: Optional, expected: bool) -> None:
    # `optionalOldSelf: true`: the schema code binds oldSelf to optional.none() on create
    rule = "!oldSelf.hasValue() || self >= oldSelf.value()"
    assert run(rule, self=3, oldSelf=old) == expected
    assert run("oldSelf.orValue(0) <= self", self=3, oldSelf=old) == expected


# ---------------------------------------------------------------------------------- formats, base64


def test_format_validate_returns_an_optional_list_of_messages() -> None:
    result = run("format.dns1123Label().validate('Bad_Name')")
    assert isinstance(result, Optional) and result.has_value
    (message,) = result.value
    assert message.startswith("a lowercase RFC 1123 label must consist of lower case")
    assert run("format.dns1123Label().validate('ok-name')") == Optional.none()
    assert run("format.dns1123Label().validate('Bad_Name').value().size() > 0") == True  # noqa: E712


@pytest.mark.parametrize(
    ("name", "value", "valid"),
    [
        ("dns1123Label", "my-name", True),
        ("dns1123Label", "My_Name", False),
        ("dns1123Label", "a" * 64, False),
        ("dns1123Subdomain", "a.b.c", True),
        ("dns1123Subdomain", "a..b", False),
        ("dns1035Label", "abc-1", True),
        ("dns1035Label", "1abc", False),
        ("dns1123LabelPrefix", "abc-", True),
        ("qualifiedName", "example.com/Name", True),
        ("qualifiedName", "-bad", False),
        ("labelValue", "", True),
        ("labelValue", "has space", False),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", True),
        ("uuid", "123", False),
        ("uri", "https://example.com", True),
        ("byte", "aGVsbG8=", True),
        ("date", "2024-01-31", True),
        ("datetime", "2024-01-31T10:00:00Z", True),
    ],
    ids=[
        "dns1123Label valid",
        "dns1123Label upper case",
        "dns1123Label too long",
        "dns1123Subdomain valid",
        "dns1123Subdomain empty part",
        "dns1035Label valid",
        "dns1035Label leading digit",
        "dns1123LabelPrefix trailing hyphen",
        "qualifiedName valid",
        "qualifiedName leading hyphen",
        "labelValue empty",
        "labelValue with a space",
        "uuid valid",
        "uuid too short",
        "uri valid",
        "byte base64",
        "date valid",
        "datetime valid",
    ],
)
def test_named_formats(name: str, value: str, valid: bool) -> None:
    check(f"format.{name}().validate('{value}').hasValue()", not valid)
    check(f"format.named('{name}').value().validate('{value}').hasValue()", not valid)


def test_format_named_of_an_unknown_format_is_none() -> None:
    check("format.named('nope').hasValue()", False)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("base64.encode(b'hello')", "aGVsbG8="),
        ("base64.decode('aGVsbG8=')", b"hello"),
        ("base64.decode('aGVsbG8')", b"hello"),  # padding is optional, as in cel-go
        ("string(base64.decode(base64.encode(b'xyz')))", "xyz"),
    ],
    ids=[
        "base64.encode(b'hello')",
        "base64.decode('aGVsbG8=')",
        "base64.decode('aGVsbG8')",
        "string(base64.decode(base64.encode(b'xyz')))",
    ],
)
def test_base64(expression: str, expected: Any) -> None:
    check(expression, expected)


@pytest.mark.parametrize(
    ("expression", "message", "overload"),
    [
        ("base64.decode('!!!')", "illegal base64 data", False),
        ("base64.encode('hello')", "no such overload", True),  # bytes only
    ],
    ids=["base64.decode('!!!')", "base64.encode('hello')"],
)
def test_base64_errors(expression: str, message: str, overload: bool) -> None:
    error = failure(expression)
    assert (error.message, error.overload) == (message, overload)


# ---------------------------------------------------------------------------------- math


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("math.greatest(1, 7, 3)", 7),
        ("math.least([4, 2])", 2),
        ("math.least(3, 1.5)", 1.5),
        ("math.abs(-3)", 3),
        ("math.sign(-2)", -1),
        ("math.ceil(1.2)", 2.0),
        ("math.floor(-1.2)", -2.0),
        ("math.round(-2.5)", -3.0),  # half away from zero, as Go's math.Round
        ("math.trunc(-1.7)", -1.0),
        ("math.isNaN(double('NaN'))", True),
        ("math.isInf(1.0 / 0.0)", True),
        ("math.isFinite(1.5)", True),
    ],
    ids=[
        "math.greatest(1, 7, 3)",
        "math.least([4, 2])",
        "math.least(3, 1.5)",
        "math.abs(-3)",
        "math.sign(-2)",
        "math.ceil(1.2)",
        "math.floor(-1.2)",
        "math.round(-2.5)",
        "math.trunc(-1.7)",
        "math.isNaN(double('NaN'))",
        "math.isInf(1.0 / 0.0)",
        "math.isFinite(1.5)",
    ],
)
def test_math(expression: str, expected: Any) -> None:
    check(expression, expected)


def test_double_division_by_zero_follows_ieee_754() -> None:
    # celpy answers +Inf for every x / 0.0; cel-go (Go's float64) gives NaN, +Inf or -Inf.
    assert math.isnan(run("0.0 / 0.0"))
    assert run("1.0 / 0.0") == math.inf
    assert run("-1.0 / 0.0") == -math.inf
    assert run("1.0 / -0.0") == -math.inf
    assert run("3.0 / 2.0") == 1.5


# ---------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "expression",
    [
        "'a' + 1",
        "'a'.lowerAscii(1)",
        "'x'.split(1)",
        "ip(1).family()",
        "ip('1.2.3.4').getHost()",
        "[1].equivalent([1])",  # sets functions need the `sets.` namespace
        "math.ceil(1)",  # doubles only
        "math.greatest('a', 'b')",
    ],
)
def test_type_errors_are_no_such_overload(expression: str) -> None:
    error = failure(expression)
    assert (error.message, error.overload) == ("no such overload", True)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9223372036854775807 + 1", "integer overflow"),
        ("math.abs(-9223372036854775807 - 1)", "integer overflow"),
        ("1 / 0", "division by zero"),
        ("1 % 0", "modulus by zero"),
        ("[1, 2][3]", "index out of bounds: 3"),
        ("{'a': 1}['b']", "no such key: b"),
        ("self.zzz == 1", "no such key: zzz"),
        ("has(self.b.c)", "no such key: b"),  # has() needs every field but the last
        ("[1, 0].all(x, 1 / x > 0)", "division by zero"),
    ],
    ids=[
        "9223372036854775807 + 1",
        "math.abs(-9223372036854775807 - 1)",
        "1 / 0",
        "1 % 0",
        "[1, 2][3]",
        "{'a': 1}['b']",
        "self.zzz == 1",
        "has(self.b.c)",
        "[1, 0].all(x, 1 / x > 0)",
    ],
)
def test_runtime_errors(expression: str, message: str) -> None:
    error = failure(expression, self={"a": 1})
    assert (error.message, error.overload) == (message, False)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("self.zzz == 1 || true", True),
        ("self.zzz == 1 && false", False),
        ("true || self.zzz == 1", True),
        ("[0, 1].exists(x, 1 / x > 0)", True),
        ("[0, 1].all(x, 1 / x < 0)", False),
    ],
    ids=[
        "self.zzz == 1 || true",
        "self.zzz == 1 && false",
        "true || self.zzz == 1",
        "[0, 1].exists(x, 1 / x > 0)",
        "[0, 1].all(x, 1 / x < 0)",
    ],
)
def test_errors_are_absorbed_like_cel_go(expression: str, expected: bool) -> None:
    result = run(expression, self={"a": 1})
    assert result == expected and isinstance(result, celtypes.BoolType)


# ---------------------------------------------------------------------------------- transition rules


@pytest.mark.parametrize(
    ("rule", "new", "old", "expected"),
    [
        ("self == oldSelf", {"name": "a"}, {"name": "a"}, True),
        ("self == oldSelf", {"name": "a"}, {"name": "b"}, False),
        ("self.replicas >= oldSelf.replicas", {"replicas": 3}, {"replicas": 4}, False),
        ("self.names.size() >= oldSelf.names.size()", {"names": ["a"]}, {"names": []}, True),
        ("oldSelf.names.all(x, x in self.names)", {"names": ["a", "b"]}, {"names": ["b"]}, True),
        ("oldSelf.names.all(x, x in self.names)", {"names": ["a"]}, {"names": ["b"]}, False),
        ("!has(oldSelf.x) || has(self.x)", {}, {"x": 1}, False),
        ("self.names == oldSelf.names", {"names": ["a", "b"]}, {"names": ["b", "a"]}, False),
    ],
    ids=[
        "self == oldSelf -> True",
        "self == oldSelf -> False",
        "self.replicas >= oldSelf.replicas",
        "self.names.size() >= oldSelf.names.size()",
        "oldSelf.names.all(x, x in self.names) -> True",
        "oldSelf.names.all(x, x in self.names) -> False",
        "!has(oldSelf.x) || has(self.x)",
        "self.names == oldSelf.names",
    ],
)
def test_transition_rules(rule: str, new: Any, old: Any, expected: bool) -> None:
    assert compile_expression(rule).uses_old_self
    assert run(rule, self=new, oldSelf=old) == expected


def test_set_and_map_lists_compare_without_order() -> None:
    # The schema code binds `x-kubernetes-list-type: set` / `map` lists as SetList / MapList.
    new_set, old_set = SetList(json_to_cel(["a", "b"])), SetList(json_to_cel(["b", "a"]))
    assert run("self == oldSelf", self=new_set, oldSelf=old_set) == True  # noqa: E712
    assert run("self + oldSelf", self=new_set, oldSelf=SetList(json_to_cel(["c", "a"]))) == [
        "a",
        "b",
        "c",
    ]

    def map_list(items: list[dict[str, Any]]) -> MapList:
        return MapList(json_to_cel(items), ("name",))

    new = map_list([{"name": "x", "v": 1}, {"name": "y", "v": 2}])
    old = map_list([{"name": "y", "v": 2}, {"name": "x", "v": 1}])
    assert run("self == oldSelf", self=new, oldSelf=old) == True  # noqa: E712
    # `+` replaces elements with the same key and appends the others
    other = map_list([{"name": "y", "v": 9}, {"name": "z", "v": 3}])
    assert run("(self + oldSelf).map(e, e.v)", self=new, oldSelf=other) == [1, 9, 3]


# ---------------------------------------------------------------- LazyVariables


_ADMISSION_VARIABLES = ("object", "oldObject", "request")


def _lazy(expression: str, **raw: Any) -> tuple[Any, LazyVariables]:
    variables = LazyVariables(raw)
    return compile_expression(expression, _ADMISSION_VARIABLES).evaluate(variables), variables


def test_lazy_variables_convert_only_what_the_expression_reads() -> None:
    """A webhook's matchCondition short-circuits on `request.operation`: the object being
    created is never converted to CEL values."""
    pod = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}]}}
    condition = (
        "request.operation == 'CREATE' || oldObject.metadata.labels != object.metadata.labels"
    )
    result, variables = _lazy(
        condition, object=pod, oldObject=None, request={"operation": "CREATE"}
    )
    assert result == celtypes.BoolType(True)
    assert variables.converted == set()  # `request.operation`: a path, converted alone
    result, variables = _lazy(
        condition,
        object=pod,
        oldObject={"metadata": {"labels": {"a": "2"}}},
        request={"operation": "UPDATE"},
    )
    assert result == celtypes.BoolType(True)
    # Field paths are converted alone: neither pod is converted whole for the comparison.
    assert variables.converted == set()
    result, variables = _lazy(
        "object == oldObject", object=pod, oldObject=dict(pod), request={"operation": "UPDATE"}
    )
    assert result == celtypes.BoolType(True)
    assert variables.converted == {"object", "oldObject"}


@pytest.mark.parametrize(
    "expression",
    [
        "object.spec.containers.all(c, c.name.startsWith('c') && has(object.metadata.labels))",
        "object.spec.containers.exists(c, c.name == request.name)",
        "object.spec.containers.map(c, c.name) == ['c', 'd']",
        "sets.contains(['c', 'd'], object.spec.containers.map(c, c.name))",
        "has(object.metadata.annotations)",
        "oldObject == null && object.metadata.labels.a == '1'",
        "has(object.metadata.labels.b)",
        "object.metadata.labels.b == '1'",
        "object.spec.missing.x == 1",
        "object.metadata.labels.a.size == 1",
        "object.spec.containers[1].name == 'd'",
        "size(object.spec.containers) == 2 && object.metadata == {'labels': {'a': '1'}}",
        "object.spec.containers.all(object, has(object.name))",
        "request.operation == 'CREATE' && oldObject.metadata.labels == null",
        "has(object.spec) && has(object.spec.containers) && !has(object.status)",
        "has(oldObject.metadata)",
        "has(object.metadata.labels.a.b)",
        "has(object.spec.containers.name)",
    ],
)
def test_lazy_variables_evaluate_as_converted_ones(expression: str) -> None:
    """Inside macros (which copy the scope) and with library namespaces, lazily converted
    variables give what converting everything first gives."""
    raw = {
        "object": {
            "metadata": {"labels": {"a": "1"}},
            "spec": {"containers": [{"name": "c"}, {"name": "d"}]},
        },
        "oldObject": None,
        "request": {"operation": "CREATE", "name": "d"},
    }
    program = compile_expression(expression, _ADMISSION_VARIABLES)

    def outcome(variables: dict[str, Any]) -> Any:
        try:
            return program.evaluate(variables)
        except CelError as exc:  # the same error either way, not just an error
            return ("error", str(exc), exc.overload)

    eager = outcome({k: json_to_cel(v) for k, v in raw.items()})
    assert outcome(LazyVariables(raw)) == eager


def test_has_on_a_lazy_variable_converts_nothing() -> None:
    """`has(oldObject.metadata.labels)` (the pod webhook's matchCondition on every pod
    update) looks the key up in the JSON: the metadata, managedFields and all, is not
    converted for it."""
    converted: list[Any] = []

    def convert(raw: Any) -> Any:
        converted.append(raw)
        return json_to_cel(raw)

    meta = {"labels": {"a": "1"}, "managedFields": [{"manager": "m", "fieldsV1": {}}]}
    condition = "!has(oldObject.metadata.labels) || !has(object.metadata.annotations)"
    program = compile_expression(condition, _ADMISSION_VARIABLES)
    variables = LazyVariables(
        {"object": {"metadata": meta}, "oldObject": {"metadata": meta}}, convert
    )
    assert program.evaluate(variables) == celtypes.BoolType(True)
    assert converted == []


def test_lazy_variables_unknown_names_stay_unknown() -> None:
    variables = LazyVariables({"object": {"a": 1}})
    assert variables.get("request") is None and "request" not in variables
    with pytest.raises(KeyError):
        variables["request"]
    assert variables["object"] == json_to_cel({"a": 1}) and "object" in variables
