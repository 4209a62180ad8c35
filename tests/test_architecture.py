"""The package's imports follow its three stages: front doors -> present -> judge -> record -> vocabulary
(``fix``, which turns findings into source changes, stands beside ``present``: it reads findings only).

Imports are read with ``ast`` (module level and inside functions alike: a lazy import is still a
dependency), so a cycle or an upward import fails here before it confuses anyone.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gradcheck_l2c"
NAME = "gradcheck_l2c"
#: Lower stages may never import higher ones; a stage may import itself and anything below.
STAGES = {"vocabulary": 0, "record": 1, "judge": 2, "present": 3, "fix": 3, "front door": 4}
VOCABULARY = {f"{NAME}.errors", f"{NAME}.records", f"{NAME}.rules"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def stage(module: str) -> str:
    if module in VOCABULARY:
        return "vocabulary"
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("record", "judge", "present", "fix"):
        return parts[1]
    return "front door"


def imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, with the parent packages Python runs on the way
    (the top-level package's ``__init__`` is left out: it imports nothing until an attribute is used)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for target in targets:
            if not target.startswith(NAME + "."):
                continue
            parts = target.split(".")
            for end in range(2, len(parts) + 1):
                prefix = ".".join(parts[:end])
                if prefix in known:
                    found.add(prefix)
    found.discard(module_name(path))
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, set(known)) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_imports_only_point_down_the_stages():
    upward = [
        f"{module} ({stage(module)}) imports {target} ({stage(target)})"
        for module, targets in import_graph().items()
        for target in sorted(targets)
        if STAGES[stage(target)] > STAGES[stage(module)]
    ]
    assert not upward, "imports against the stages:\n" + "\n".join(upward)


#: What the judge may import from the record stage: the query surface and the types of the facts it returns.
RECORD_SURFACE = {f"{NAME}.record", f"{NAME}.record.query", f"{NAME}.record.facts"}


def test_the_judge_reads_the_record_only_through_its_query_surface():
    reaching = [f"{module} imports {target}" for module, targets in import_graph().items()
                if stage(module) == "judge" for target in sorted(targets)
                if stage(target) == "record" and target not in RECORD_SURFACE]
    assert not reaching, "the judge reads record facts through record.query and record.facts only:\n" + \
        "\n".join(reaching)


def test_fixes_read_findings_not_the_record_or_the_judge_and_run_nothing():
    """The fix stage works from findings (records.py) and source text; running a copy is the front door's."""
    reaching = [f"{module} imports {target}" for module, targets in import_graph().items()
                if stage(module) == "fix" for target in sorted(targets)
                if stage(target) in ("record", "judge", "present")]
    assert not reaching


def test_the_record_stage_imports_nothing_of_the_stages_above():
    upward = [f"{module} imports {target}" for module, targets in import_graph().items()
              if stage(module) == "record" for target in sorted(targets) if stage(target) in ("judge", "present")]
    assert not upward


#: Sizes past which a module or class has more than one job.
MAX_MODULE_LINES, MAX_CLASS_LINES, MAX_TRACE_STATE_LINES = 400, 200, 150


def test_modules_and_classes_stay_small():
    too_big = []
    for name, path in modules().items():
        source = path.read_text(encoding="utf-8")
        if source.count("\n") > MAX_MODULE_LINES:
            too_big.append(f"{name}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                limit = MAX_TRACE_STATE_LINES if node.name == "TraceState" else MAX_CLASS_LINES
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    too_big.append(f"{name}.{node.name}: {length} lines")
    assert not too_big


def test_detectors_use_small_helpers_not_the_judge_entry_point():
    graph = import_graph()
    offenders = [m for m, targets in graph.items()
                 if m.startswith(f"{NAME}.judge.detectors") and f"{NAME}.judge.run" in targets]
    assert not offenders


def test_demo_runs_scripts_through_the_runner_not_the_cli():
    graph = import_graph()
    assert f"{NAME}.cli" not in graph[f"{NAME}.demo"]
    assert f"{NAME}.runner" in graph[f"{NAME}.demo"]


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b"}, "b": set(), "c": {"a"}}, None),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert find_cycle(graph) == expected


def test_the_stage_check_sees_an_upward_import(tmp_path, monkeypatch):
    """Guard the guard: a record module importing the judge is reported."""
    fake = tmp_path / NAME
    (fake / "record").mkdir(parents=True)
    (fake / "judge").mkdir()
    for init in (fake / "__init__.py", fake / "record" / "__init__.py", fake / "judge" / "__init__.py"):
        init.write_text("")
    (fake / "judge" / "run.py").write_text("")
    (fake / "record" / "state.py").write_text(f"def f():\n    from {NAME}.judge.run import judge\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    graph = import_graph()
    assert graph[f"{NAME}.record.state"] == {f"{NAME}.judge", f"{NAME}.judge.run"}
