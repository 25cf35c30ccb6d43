"""The import contract of ARCHITECTURE.md: no import loop between modules, and no import against the layers.

The import graph comes from grimp (the graph library under import-linter): every `import` statement of our
packages, function-level ones included (a loop is a loop wherever the import sits), those under
`if TYPE_CHECKING:` left out (they never run).
"""

from __future__ import annotations

import graphlib

import grimp
import pytest

#: Our packages by their role: the one place they are named (the move under `videoferry.` edits only here).
PREFIX = ""
FLOWS = PREFIX + "flows"
TASKS = PREFIX + "tasks"
CONNECTORS = PREFIX + "connectors"
STATE = PREFIX + "state"
CORE = PREFIX + "core"
EMULATOR = PREFIX + "emulator"
BENCH = PREFIX + "bench"
API = "videoferry"  # the Python API (`import videoferry`): nothing of ours imports it
OURS = (API, FLOWS, TASKS, CONNECTORS, STATE, CORE, EMULATOR, BENCH)

#: Higher first: a package may import those below it, never those above (connectors and state: neither).
LAYERS = (FLOWS, TASKS, grimp.Layer(CONNECTORS, STATE, independent=True), CORE)

#: Imports that no layer order says: (importer, what it never imports, why).
FORBIDDEN = (
    (CONNECTORS, ("prefect",), "connectors/ never imports Prefect"),
    (STATE, ("prefect",), "state/ never imports Prefect"),
    (CORE, tuple(p for p in OURS if p != CORE), "core/ imports none of ours"),
    (
        EMULATOR,
        tuple(p for p in OURS if p != EMULATOR),
        "emulator/ (a separate program) imports none of ours",
    ),
    *((p, (API,), "nothing of ours imports the Python API") for p in OURS if p != API),
    *((p, (BENCH,), "nothing of ours imports the benchmarks") for p in OURS if p != BENCH),
)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    """The import graph of our packages, at run time (Prefect and the other libraries as leaves)."""
    roots = sorted({name.split(".")[0] for name in OURS})
    return grimp.build_graph(
        *roots, include_external_packages=True, exclude_type_checking_imports=True, cache_dir=None
    )


def _ours(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in OURS)


def _line(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    """`importer:line imports imported` for the first statement that does it."""
    details = graph.get_import_details(importer=importer, imported=imported)
    where = f":{details[0]['line_number']}" if details else ""
    return f"{importer}{where} imports {imported}"


def test_no_import_loop_between_modules(graph: grimp.ImportGraph) -> None:
    """Every import of one of our modules by another, taken together, has no cycle."""
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if _ours(i)} for m in graph.modules}
    edges = {m: deps for m, deps in edges.items() if _ours(m)}
    loops: list[str] = []
    while len(loops) < 20:  # each loop found loses one import below, so this ends
        try:
            graphlib.TopologicalSorter(edges).prepare()
            break
        except graphlib.CycleError as exc:
            cycle = exc.args[1]  # [a, b, ..., a]: each imported by the one after it
            loops.append("\n    ".join(_line(graph, cycle[i + 1], cycle[i]) for i in range(len(cycle) - 1)))
            edges[cycle[1]].discard(cycle[0])
    assert not loops, "import loops:\n  - " + "\n  - ".join(loops)


def test_packages_import_only_downwards(graph: grimp.ImportGraph) -> None:
    """The order ARCHITECTURE.md draws: flows over tasks over connectors | state over core."""
    illegal = graph.find_illegal_dependencies_for_layers(layers=LAYERS)
    found = sorted(
        f"{dep.importer} -> {dep.imported}: "
        + " -> ".join([",".join(sorted(route.heads)), *route.middle, ",".join(sorted(route.tails))])
        for dep in illegal
        for route in dep.routes
    )
    assert not found, "imports against the layers:\n  " + "\n  ".join(found)


@pytest.mark.parametrize(
    ("importer", "never", "why"), FORBIDDEN, ids=[f"{f[0]}-x-{'+'.join(f[1])}" for f in FORBIDDEN]
)
def test_package_never_imports(
    graph: grimp.ImportGraph, importer: str, never: tuple[str, ...], why: str
) -> None:
    """connectors/ and state/ without Prefect, core/ and emulator/ without anything of ours, and so on."""
    modules = {importer} | graph.find_descendants(importer)
    found = sorted(
        _line(graph, module, imported)
        for module in modules
        for imported in graph.find_modules_directly_imported_by(module)
        if any(imported == t or imported.startswith(t + ".") for t in never)
    )
    assert not found, f"{why}:\n  " + "\n  ".join(found)
