"""kubectl's jsonpath template language (`-o jsonpath=...`): the forms kubectl users write."""

from __future__ import annotations

import pytest

from jobset.commands.jsonpath import JsonPathError, render

LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "train"}},
            "status": {
                "restarts": 2,
                "conditions": [{"type": "Completed", "status": "True", "reason": "AllDone"}],
            },
        },
        {"metadata": {"name": "b"}, "status": {"restarts": 0, "conditions": []}},
    ],
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.items[*].metadata.name}", "a b"),
        ("{.kind}", "List"),
        ("{$.kind}", "List"),
        ("kind={.kind}!", "kind=List!"),
        ("{.items[0].metadata.name}", "a"),
        ("{.items[-1].metadata.name}", "b"),
        ("{.items[0:1].metadata.name}", "a"),
        ("{.items[*]['metadata']['name']}", "a b"),
        ("{.items[0].metadata.labels['app.kubernetes.io/name']}", "train"),
        (r"{.items[0].metadata.labels.app\.kubernetes\.io/name}", "train"),
        ("{.items[?(@.status.restarts>1)].metadata.name}", "a"),
        ('{.items[?(@.metadata.name=="b")].status.restarts}', "0"),
        ('{.items[0].status.conditions[?(@.type=="Completed")].reason}', "AllDone"),
        ("{.items[?(@.metadata.labels)].metadata.name}", "a"),
        ("{..name}", "a b"),
        ("{.items[0,1].metadata.name}", "a b"),
        ('{range .items[*]}{.metadata.name}{"\\t"}{.status.restarts}{"\\n"}{end}', "a\t2\nb\t0\n"),
        ("{range .items[*]}[{.metadata.name}]{end}", "[a][b]"),
        ("{.items[*].missing}", ""),
        ("{.items[1].status}", '{"conditions":[],"restarts":0}'),
        (
            "{.items[0].status.conditions[0]}",
            '{"reason":"AllDone","status":"True","type":"Completed"}',
        ),
        ("no braces at all", "no braces at all"),
    ],
    ids=[
        "wildcard",
        "field",
        "root",
        "text around",
        "index",
        "negative index",
        "slice",
        "bracket keys",
        "quoted key with dots",
        "escaped dots",
        "filter comparison",
        "filter equality",
        "filter inside a path",
        "filter on existence",
        "recursive descent",
        "union of indices",
        "range with tabs and newlines",
        "range with text",
        "missing field",
        "an object as JSON",
        "a nested object as JSON",
        "no braces",
    ],
)
def test_templates(template: str, expected: str) -> None:
    assert render(template, LIST) == expected


def test_a_single_object() -> None:
    assert render("{.metadata.name}", LIST["items"][0]) == "a"


@pytest.mark.parametrize("template", ["{.items[", "{range .items[*]}{.x}", "{end}", "{.items[x]}"])
def test_bad_templates_raise(template: str) -> None:
    with pytest.raises(JsonPathError):
        render(template, LIST)


def test_index_out_of_range_is_an_error_as_in_kubectl() -> None:
    with pytest.raises(JsonPathError, match="out of bounds"):
        render("{.items[5]}", LIST)
