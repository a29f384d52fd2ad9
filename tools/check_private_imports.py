"""No `_private` name of `src/` is used outside its module.

A leading underscore says "this module's business": it may change without its users being
told. A name another module needs is part of its module's interface, so it drops the
underscore (and joins `__all__` where the module has one), or the use moves into the module.
Three uses are refused:

1. `from pkg.mod import _name` (or the relative form) where `pkg.mod` is another module of
   `src/`;
2. `mod._name` where `mod` names another module of `src/` (`import pkg.mod`,
   `from pkg import mod`);
3. in `src/` only, `obj._name` (not on `self`/`cls`) or `self._name`, where this module
   defines no `_name` but another module of `src/` does: a method or attribute of another
   module's class, reached on an instance or inherited. The AST does not know `obj`'s type, so
   this rule goes by the name; where it is a third-party library's member that happens to
   share a name with one of `src/`, the line says so with `# private-ok: <why>`.

A private module (`pkg/_impl.py`) is its package's business: `from pkg import _impl` and
`from pkg._impl import name` are fine inside `pkg`.

`tests/` and `benchmarks/` are held to rules 1 and 2: a helper a test imports is a stated
interface. Rule 3 does not apply to them: a test may read an object's internal state (a
Prometheus child's `_value`, a queue's backlog, a sandbox table) to observe what has no
public reader, and adding readers for tests alone would widen the product's interface.

    python tools/check_private_imports.py [PATH ...]   # default: src tests benchmarks
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PATHS = ("src", "tests", "benchmarks")
PRAGMA = "# private-ok:"


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at `path` under `root` (an `__init__` names its package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def defined_names(tree: ast.AST) -> set[str]:
    """Every private name a module defines: functions, classes, variables, attributes it
    assigns (`self._x = ...`), parameters and `__slots__` entries."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            out.update(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return {n for n in out if is_private(n)}


@dataclass
class Index:
    """The modules of `src/` and the private names each defines."""

    modules: set[str] = field(default_factory=set)
    roots: set[str] = field(default_factory=set)  # the top-level packages
    defined: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, src: Path) -> Index:
        index = cls()
        for file in sorted(src.rglob("*.py")):
            name = module_name(file, src)
            index.modules.add(name)
            index.roots.add(name.split(".")[0])
            index.defined[name] = defined_names(ast.parse(file.read_text()))
        return index

    def elsewhere(self, name: str, module: str) -> bool:
        return any(name in names for mod, names in self.defined.items() if mod != module)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


class _Checker:
    def __init__(self, index: Index, module: str, is_package: bool, in_src: bool) -> None:
        self.index = index
        self.module = module
        self.is_package = is_package
        self.in_src = in_src
        self.bound: dict[str, str] = {}  # local name -> the src module it names
        self.foreign: set[str] = set()  # local names imported from outside src/

    def imports(self, tree: ast.AST) -> Iterator[tuple[int, str]]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name if alias.asname else alias.name.split(".")[0]
                    if target.split(".")[0] in self.index.roots:
                        self.bound[alias.asname or target] = target
                    else:
                        self.foreign.add(alias.asname or target)
            elif isinstance(node, ast.ImportFrom):
                yield from self._import_from(node)

    def _import_from(self, node: ast.ImportFrom) -> Iterator[tuple[int, str]]:
        source = _resolve(self.module, self.is_package, node)
        if source not in self.index.modules:
            self.foreign.update(alias.asname or alias.name for alias in node.names)
            return
        for alias in node.names:
            name = alias.name
            submodule = f"{source}.{name}"
            if submodule in self.index.modules:
                self.bound[alias.asname or name] = submodule
            if not is_private(name) or source == self.module:
                continue
            if submodule in self.index.modules and _inside(self.module, source):
                continue  # a package's private module, imported inside the package
            yield node.lineno, f"imports {name} from {source}"

    def attributes(self, tree: ast.AST, module_defines: set[str]) -> Iterator[tuple[int, str]]:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            target = self._module_of(node.value)
            if target is not None:
                if target != self.module:
                    yield node.lineno, f"uses {target}.{node.attr}"
                continue
            if not self.in_src or node.attr in module_defines or self._foreign(node.value):
                continue
            if self.index.elsewhere(node.attr, self.module):
                owner = _dotted(node.value) or "an object"
                yield node.lineno, f"uses {owner}.{node.attr}, defined in another module"

    def _foreign(self, node: ast.expr) -> bool:
        """Whether `node` is reached from a name imported from outside `src/` (`os._exit`)."""
        dotted = _dotted(node)
        return dotted is not None and dotted.partition(".")[0] in self.foreign

    def _module_of(self, node: ast.expr) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.bound.get(head)
        if base is None:
            return None
        full = f"{base}.{rest}" if rest else base
        return full if full in self.index.modules else None


def violations(
    source: str, module: str, index: Index, *, is_package: bool = False, in_src: bool = True
) -> Iterator[tuple[int, str]]:
    """`(line, what)` of every use of another module's private name in `source`."""
    tree = ast.parse(source)
    lines = source.splitlines()
    checker = _Checker(index, module, is_package, in_src)
    found = [*checker.imports(tree), *checker.attributes(tree, defined_names(tree))]
    for line, what in sorted(set(found)):
        if PRAGMA not in lines[line - 1]:
            yield line, what


def _python_files(paths: Iterable[str]) -> Iterator[Path]:
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*.py") if ".venv" not in f.parts)
        elif p.suffix == ".py":
            yield p


def main(argv: Sequence[str] | None = None, src: Path = Path("src")) -> int:
    paths = (sys.argv[1:] if argv is None else list(argv)) or list(DEFAULT_PATHS)
    index = Index.of(src)
    found = 0
    for file in _python_files(paths):
        in_src = file.resolve().is_relative_to(src.resolve())
        module = module_name(file, src) if in_src else ".".join(file.with_suffix("").parts)
        source = file.read_text()
        for line, what in violations(
            source, module, index, is_package=file.name == "__init__.py", in_src=in_src
        ):
            print(f"{file}:{line}: {what}")
            found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
