"""No private name of src/ is used outside its module (`tools/check_private_imports.py`)."""

from __future__ import annotations

import pytest

from tests.unit.tools import REPO, load_tool

check = load_tool("check_private_imports")

# pkg/__init__.py, pkg/a.py (defines _helper and sets self._state), pkg/b.py, pkg/_impl.py,
# other/c.py.
INDEX = check.Index(
    modules={"pkg", "pkg.a", "pkg.b", "pkg._impl", "other", "other.c"},
    roots={"pkg", "other"},
    defined={"pkg.a": {"_helper", "_state"}, "pkg._impl": set(), "pkg.b": set()},
)


def test_src_tests_and_benchmarks_keep_to_public_names() -> None:
    paths = [str(REPO / p) for p in check.DEFAULT_PATHS]
    assert check.main(paths, src=REPO / "src") == 0


@pytest.mark.parametrize(
    ("module", "source", "flagged"),
    [
        pytest.param("pkg.b", "from pkg.a import _helper\n", True, id="absolute import"),
        pytest.param("pkg.b", "from .a import _helper\n", True, id="relative import"),
        pytest.param("pkg.b", "from pkg.a import helper\n", False, id="public name"),
        pytest.param("pkg.b", "import pkg.a\npkg.a._helper()\n", True, id="dotted module use"),
        pytest.param("pkg.b", "from pkg import a\na._helper()\n", True, id="imported module"),
        pytest.param("pkg.b", "import pkg.a as m\nm._helper\n", True, id="aliased module"),
        pytest.param("pkg.b", "def f(obj):\n    obj._state\n", True, id="another's attribute"),
        pytest.param(
            "pkg.b",
            "class B:\n    def f(self):\n        return self._state\n",
            True,
            id="an inherited attribute",
        ),
        pytest.param(
            "pkg.b",
            "class B:\n    def f(self):\n        self._state = 1\n        return self._state\n",
            False,
            id="an attribute of its own",
        ),
        pytest.param("pkg.b", "def f(obj):\n    obj._unknown\n", False, id="not a name of src"),
        pytest.param("pkg.b", "import os\nos._helper\n", False, id="a foreign module"),
        pytest.param(
            "pkg.b",
            "def f(obj):\n    obj._state  # private-ok: its library's\n",
            False,
            id="marked foreign",
        ),
        pytest.param("pkg.b", "from pkg import _impl\n", False, id="private module in package"),
        pytest.param("other.c", "from pkg import _impl\n", True, id="private module outside"),
        pytest.param("pkg.a", "from pkg.a import _helper\n", False, id="its own module"),
    ],
)
def test_src_uses(module: str, source: str, flagged: bool) -> None:
    assert bool(list(check.violations(source, module, INDEX))) is flagged


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        pytest.param("from pkg.a import _helper\n", True, id="import"),
        pytest.param("import pkg.a\npkg.a._helper\n", True, id="module use"),
        pytest.param("def test(obj):\n    obj._state\n", False, id="an object's state"),
    ],
)
def test_test_uses(source: str, flagged: bool) -> None:
    found = list(check.violations(source, "tests.test_x", INDEX, in_src=False))
    assert bool(found) is flagged
