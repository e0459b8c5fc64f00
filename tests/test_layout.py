"""The package's layout as docs/design.md §2 draws it: layers that import one way, no import circles (imports inside
functions counted too), every import inside a function saying why it is there, no file a newcomer cannot read in one
sitting, the profiling aids outside the package, and every old module path (pickled in checkpoints written before a
move) still naming the same classes."""

from __future__ import annotations

import ast
import importlib
import pickle
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "smac_rllib"
LAYER = {"core": 0, "models": 1, "objectives": 2, "training": 3, "envs": 3, "algorithms": 4, "cli": 5, "experiments": 5}
MAX_LINES = 400
# The rule for an import inside a function: a comment saying why on its line or just above it (other imports of the
# same block, and blank lines between them, may sit in between), e.g. ``# lazy: keeps the CLI's start free of torch``.
LAZY_REASON = re.compile(r"#.*\blazy\b\s*:\s*\S")
BLOCK = ("#", "import ", "from ")


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(tree: ast.Module):
    """(import node, inside a function?) for every import statement, at any depth (class bodies run at load)."""

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from walk(tree, False)


def _import_edges() -> list[tuple[str, str, bool, int]]:
    """(importer, imported package module, inside a function?, line) for every import of ``smac_rllib.*``: ``import
    a.b``, ``from a import b`` (b a module or a name) and ``from . import b`` forms, with the packages a dotted import
    runs on its way (their ``__init__``)."""
    modules = _module_names()
    edges = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node, in_function in _imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            found = set()
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                while target:
                    if target != name and not name.startswith(target + "."):
                        found.add(target)
                    target = target.rpartition(".")[0]
            edges += [(name, target, in_function, node.lineno) for target in sorted(found)]
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_counting_the_imports_inside_functions():
    edges = _import_edges()
    graph: dict[str, set[str]] = {}
    for importer, imported, _, _ in edges:
        graph.setdefault(importer, set()).add(imported)
    circles = []
    for component in _cycles(graph):
        inside = [
            f"{a} -> {b} (line {line}{', in a function' if in_function else ''})"
            for a, b, in_function, line in edges
            if a in component and b in component
        ]
        circles.append(" | ".join(inside))
    assert circles == [], "import circles:\n" + "\n".join(circles)
    assert len(graph) > 80  # the walk saw the package


def test_imports_go_one_way():
    upward = []
    for importer, imported, _, line in _import_edges():
        a, b = importer.split("."), imported.split(".")
        if len(a) > 1 and len(b) > 1 and a[1] in LAYER and b[1] in LAYER and LAYER[b[1]] > LAYER[a[1]]:
            upward.append(f"{importer}:{line} -> {imported}")
    assert upward == []


def test_every_import_of_ours_inside_a_function_says_why():
    """Imports of ``smac_rllib`` modules belong at the top; one inside a function saves real start-up time (or keeps
    Ray out of a module that must import without it) and says so in a ``# lazy: <why>`` comment."""
    silent = []
    for path in _module_names().values():
        lines = path.read_text().splitlines()
        for node, in_function in _imports(ast.parse("\n".join(lines))):
            ours = (
                any(a.name.split(".")[0] == "smac_rllib" for a in node.names)
                if isinstance(node, ast.Import)
                else node.level > 0 or (node.module or "").split(".")[0] == "smac_rllib"
            )
            if not (in_function and ours):
                continue
            said = any(LAZY_REASON.search(line) for line in lines[node.lineno - 1 : node.end_lineno])
            above = node.lineno - 2
            while not said and above >= 0 and (not lines[above].strip() or lines[above].strip().startswith(BLOCK)):
                said = bool(LAZY_REASON.search(lines[above]))
                above -= 1
            if not said:
                silent.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert silent == [], "imports inside functions without a `# lazy: <why>` comment:\n" + "\n".join(silent)


def test_no_file_over_400_lines_and_the_profiling_aids_are_outside_the_package():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
    assert not (PACKAGE / "stack_sampler.py").exists()
    assert (PACKAGE.parent / "benchmarks" / "stack_sampler.py").is_file()


def test_every_moved_module_path_imports_as_the_new_module():
    import smac_rllib

    for old, new in smac_rllib.MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new), old


@pytest.mark.parametrize(
    "old, name, new",
    [
        # one-module baselines before they became RLlib-style folders
        ("smac_rllib.algorithms.baselines.td3", "TD3TorchLearner", "smac_rllib.algorithms.baselines.td3.td3_learner"),
        (
            "smac_rllib.algorithms.baselines.td3",
            "TD3TorchRLModule",
            "smac_rllib.algorithms.baselines.td3.td3_rl_module",
        ),
        ("smac_rllib.algorithms.td3", "TD3Config", "smac_rllib.algorithms.baselines.td3.td3"),
        (
            "smac_rllib.algorithms.sac_baseline",
            "SACBaselineTorchLearner",
            "smac_rllib.algorithms.baselines.sac_baseline.sac_baseline_learner",
        ),
        (
            "smac_rllib.algorithms.baselines.sac_baseline",
            "SACBaselineCatalog",
            "smac_rllib.algorithms.baselines.sac_baseline.sac_baseline_rl_module",
        ),
        (
            "smac_rllib.algorithms.baselines.sac_flow",
            "SACFlowTorchRLModule",
            "smac_rllib.algorithms.baselines.sac_flow.sac_flow_rl_module",
        ),
        (
            "smac_rllib.algorithms.sac_moe",
            "SACMoETorchRLModule",
            "smac_rllib.algorithms.baselines.sac_moe.sac_moe_rl_module",
        ),
        (
            "smac_rllib.algorithms.policy_sac",
            "PolicySACTorchLearner",
            "smac_rllib.algorithms.baselines.policy_sac.policy_sac_learner",
        ),
        # the speed layer before it became one package
        ("smac_rllib.training.lean_update", "CachedTrainModeMixin", "smac_rllib.training.fast_update.train_mode"),
        ("smac_rllib.algorithms.lean_update", "LeanMetricsLogger", "smac_rllib.training.fast_update.lean_update"),
        ("smac_rllib.training.captured_update", "GraphedUpdate", "smac_rllib.training.fast_update.captured_update"),
        ("smac_rllib.algorithms.replay_learner", "DeviceMetrics", "smac_rllib.training.fast_update.device_metrics"),
    ],
)
def test_a_checkpoints_old_class_path_unpickles_as_the_class(old, name, new):
    """What a checkpoint holds: a pickle that names the class by the module path it had then (a GLOBAL opcode)."""
    assert pickle.loads(f"c{old}\n{name}\n.".encode()) is getattr(importlib.import_module(new), name)
