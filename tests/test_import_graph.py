"""No import circle in ``gpu_zoo``: every module's imports, read with ``ast``, form a graph without cycles.

A circle means no module of it can be read, tested or loaded on its own, and its import order decides
which names exist when: the layering rots without anyone seeing it. The graph's nodes are the modules
under ``gpu_zoo/`` (a package is its ``__init__``); its edges are the imports each module states,
at module level or inside a function alike (one that runs late still ties the two modules together).

Edges, resolved the way Python resolves them:
  - ``import a.b.c`` and ``from a.b import c`` (``c`` a module) are edges to ``a.b.c``; ``from a.b import
    name`` (``name`` not a module) is an edge to ``a.b``, the package's ``__init__``;
  - relative imports are resolved against the importing module's package;
  - the parent packages that Python runs before a submodule are not edges: every module would otherwise
    depend on ``gpu_zoo/__init__``, which re-exports the registry, which imports every env, which imports
    the core: a circle through each ``__init__`` that no layering could avoid. An ``__init__`` importing
    its own submodules is an ordinary edge, and a submodule importing names from its own package's
    ``__init__`` (``from gpu_zoo.core import EnvSpec`` inside ``gpu_zoo/core/``) closes a real circle;
  - a module named by a string and imported at run time (``importlib.import_module``, as the registry
    finds each env's spec) is data the caller was handed, not an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gpu_zoo"


def _modules() -> dict[str, Path]:
    """Dotted name -> file of each module under ``gpu_zoo/`` (a package named by its ``__init__.py``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, modules: dict) -> set[str]:
    """The ``gpu_zoo`` modules one import statement in module ``name`` names."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & modules.keys()
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        pkg = ".".join(base + ([node.module] if node.module else []))
    else:
        pkg = node.module
    found = set()
    for alias in node.names:
        sub = f"{pkg}.{alias.name}"
        found.add(sub if sub in modules else pkg)
    return found & modules.keys()


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``gpu_zoo`` modules it imports anywhere in its text."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[name] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                graph[name] |= _imported(node, name, is_package, modules)
    return graph


def _run_at_import(body: list[ast.stmt]):
    """The import statements among ``body`` that run when the module is imported.

    Function bodies run later, and ``if TYPE_CHECKING:`` blocks never; class bodies, ``if`` and
    ``try`` blocks at module level run at import.
    """
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            yield from _run_at_import(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _run_at_import(node.body + node.orelse + node.finalbody + [s for h in node.handlers
                                                                                  for s in h.body])
        elif isinstance(node, ast.ClassDef | ast.With):
            yield from _run_at_import(node.body)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly-connected component of more than one module, and each module importing itself (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert {"gpu_zoo", "gpu_zoo.cli", "gpu_zoo.core", "gpu_zoo.core.compiler.compile"} <= graph.keys()
    assert "gpu_zoo.registry" in graph["gpu_zoo.core.compiler.kernel_source"]  # a function-level import
    assert "gpu_zoo.core.api.spec" in graph["gpu_zoo.core"]  # an __init__ importing its submodule


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["d"]]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import circles in gpu_zoo:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_package_imports_no_trainer_at_import_time():
    """The trainer (``trainers/``) imports gpu_zoo; gpu_zoo imports it only inside the CLI's commands."""
    found = []
    for name, path in _modules().items():
        for node in _run_at_import(ast.parse(path.read_text(), filename=str(path)).body):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{name}: {n}" for n in names if not getattr(node, "level", 0) and n.split(".")[0] == "trainers"]
    assert not found, "gpu_zoo imports the trainer at import time:\n" + "\n".join(found)


LAYERS = ("api", "compiler", "runtime", "faces")
"""The core's layers, in order: each imports only from itself and the layers before it."""


def _layer(module: str) -> str | None:
    """The layer of a ``gpu_zoo.core`` module, None for any other (``compiler.speed`` is part of ``compiler``)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["gpu_zoo", "core"] and len(parts) > 2 else None


def upward_edges(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a core module from a later layer than its own, as ``module -> imported``."""
    return [f"{m} -> {d}" for m, deps in sorted(graph.items()) if _layer(m)
            for d in sorted(deps) if _layer(d) and LAYERS.index(_layer(d)) > LAYERS.index(_layer(m))]


def test_upward_edges_are_found():
    graph = {"gpu_zoo.core.api.spec": {"gpu_zoo.core.compiler.speed.rebuild"},
             "gpu_zoo.core.faces.aec": {"gpu_zoo.core.runtime.batched", "gpu_zoo.core.api.spec"},
             "gpu_zoo.registry": {"gpu_zoo.core.faces.aec"}}
    assert upward_edges(graph) == ["gpu_zoo.core.api.spec -> gpu_zoo.core.compiler.speed.rebuild"]


def test_core_layers_import_only_downwards():
    """``api`` imports no compiler, runtime or face; ``compiler`` (``speed`` included) no runtime or face; and so on."""
    graph = import_graph()
    assert {_layer(m) for m in graph} - {None} == set(LAYERS)
    found = upward_edges(graph)
    assert not found, "a core layer imports a later one:\n" + "\n".join(found)


def test_the_api_layer_stands_alone():
    """What an env author imports reaches no other part of gpu_zoo, not even through another module."""
    graph = import_graph()
    reached, todo = set(), [m for m in graph if _layer(m) == "api"]
    while todo:
        m = todo.pop()
        if m not in reached:
            reached.add(m)
            todo += graph[m]
    assert {m for m in reached if _layer(m) != "api"} == set()
