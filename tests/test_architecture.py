"""The architecture, read from the modules' own imports (an AST walk, nothing imported): no
import cycles anywhere, arrows between packages only point down, and no module grows past the
size a reader can hold in mind."""

from __future__ import annotations

import ast
import functools
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 500

# The layers, top down: a package may import only packages in lower layers (and itself).
# cassette, fake and trace share a layer but do not import one another, except that trace reads
# the cassette's logged requests: see ALLOWED_SIDEWAYS.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"replay.cli", "replay.pytest_plugin"}),
    frozenset({"replay.session", "replay.claude_code"}),
    frozenset({"replay.proxy"}),
    frozenset({"replay.trace", "replay.cassette", "replay.fake"}),
    frozenset({"replay.schema", "replay.redact", "replay.http", "replay.prompt_cache"}),
    frozenset({"replay.storage"}),
    frozenset({"engine"}),
)
ALLOWED_SIDEWAYS = {("replay.trace", "replay.cassette")}
# Foundation modules: anything may import them, and they import nothing of the project but
# one another.
FOUNDATION = {"replay.collector", "replay.lazy_exports", "replay.loopback", "replay.network_guard"}
# Top-level modules of replay, each a package of its own for these rules.
STANDALONE = {"replay", "replay.respx_alias", *FOUNDATION}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("replay/**/*.py")]:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path, tree: ast.Module) -> Iterator[Import]:
    """Every project module ``name`` imports, at any depth of its code (a function-level import
    is an import too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # `from package import module` imports the module; `from module import name` the module.
            targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            if target in MODULES and target != name:
                yield Import(name, target, node.lineno)


def _private_names(path: Path, tree: ast.Module) -> Iterator[str]:
    """Each private name ``path`` imports from a module of the project (``file:line imports
    name from module``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in {"engine", "replay"}:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from {node.module}"


@functools.cache
def _read() -> tuple[tuple[Import, ...], tuple[str, ...]]:
    """Every module parsed once, when a test first asks rather than while collecting (every xdist
    worker collects this file, one runs it): its imports of project modules and of private names.
    The collector is paused meanwhile: the syntax trees are hundreds of thousands of objects,
    none of them garbage, that it would walk again and again while they are built."""
    imports: list[Import] = []
    private: list[str] = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        for name, path in sorted(MODULES.items()):
            tree = ast.parse(path.read_text(), filename=str(path))
            imports.extend(_imports(name, path, tree))
            private.extend(_private_names(path, tree))
    finally:
        if collecting:
            gc.enable()
    return tuple(imports), tuple(private)


def project_imports() -> tuple[Import, ...]:
    """Every import of a project module by another."""
    return _read()[0]


def _package(module: str) -> str:
    if module == "engine" or module.startswith("engine."):
        return "engine"
    if module in STANDALONE:
        return module
    return ".".join(module.split(".")[:2])


def _layer(package: str) -> int | None:
    return next((depth for depth, layer in enumerate(LAYERS) if package in layer), None)


def test_every_replay_subpackage_has_a_place_in_the_layers() -> None:
    packages = {_package(module) for module in MODULES} - STANDALONE
    assert {package for package in packages if _layer(package) is None} == set()


def test_imports_only_point_down() -> None:
    upward = []
    for found in project_imports():
        source, target = _package(found.importer), _package(found.imported)
        if source == target or source in STANDALONE or (source, target) in ALLOWED_SIDEWAYS:
            continue
        if target in FOUNDATION:
            continue
        source_layer, target_layer = _layer(source), _layer(target)
        if target in STANDALONE or source_layer is None or target_layer is None or target_layer <= source_layer:
            upward.append(f"{MODULES[found.importer].relative_to(ROOT)}:{found.line} imports {found.imported}")
    assert upward == []


def test_foundation_modules_import_nothing_of_the_project() -> None:
    imports = project_imports()
    assert [found for found in imports if found.importer in FOUNDATION and found.imported not in FOUNDATION] == []


def test_nothing_in_engine_imports_replay() -> None:
    upward = [i for i in project_imports() if i.importer.startswith("engine") and i.imported.startswith("replay")]
    assert upward == []


def test_cassettes_never_import_the_fake_model_or_sessions() -> None:
    forbidden = ("replay.fake", "replay.session")
    assert [
        found
        for found in project_imports()
        if _package(found.importer) == "replay.cassette" and _package(found.imported) in forbidden
    ] == []


def test_there_is_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for found in project_imports():
        graph[found.importer].add(found.imported)
    cycles = _strongly_connected(graph)
    assert [sorted(cycle) for cycle in cycles if len(cycle) > 1] == []


def test_no_module_imports_another_modules_private_name() -> None:
    # A private module (cassette/_io.py) is its package's business; a private name is its module's.
    assert list(_read()[1]) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_the_size_limit(name: str) -> None:
    lines = MODULES[name].read_text().count("\n")
    assert lines <= MAX_MODULE_LINES, f"{MODULES[name].relative_to(ROOT)} has {lines} lines"


def test_the_rules_see_a_cycle_and_an_upward_import() -> None:
    # The checks above would pass vacuously if the walk found nothing: it finds what is there.
    assert [cycle for cycle in _strongly_connected({"a": {"b"}, "b": {"a"}, "c": set()}) if len(cycle) > 1] == [
        {"a", "b"}
    ]
    assert Import("replay.session.recording", "replay.fake.model", 0) in [
        Import(found.importer, found.imported, 0) for found in project_imports()
    ]
    assert _layer(_package("replay.cli")) == 0 and _layer(_package("engine.loop")) == len(LAYERS) - 1


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the import graph is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components
