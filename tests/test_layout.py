"""The package's layout as docs/design.md §2 draws it: layers that import one way, no import circles, no file a
newcomer cannot read in one sitting, the profiling aids outside the package, and every old module path (pickled in
checkpoints written before a move) still naming the same classes."""

from __future__ import annotations

import ast
import importlib
import pickle
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "smac_rllib"
LAYER = {"core": 0, "models": 1, "objectives": 2, "training": 3, "envs": 3, "algorithms": 4, "cli": 5, "experiments": 5}


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(imports run when the module loads, imports inside functions): module -> the package modules it imports
    (with the packages a dotted import runs on its way)."""
    modules = _module_names()
    top, lazy = {m: set() for m in modules}, {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        at_load = {id(n) for n in tree.body} | {
            id(n) for block in tree.body if isinstance(block, (ast.If, ast.Try)) for n in block.body
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                while target:
                    if target != name and not name.startswith(target + "."):
                        (top if id(node) in at_load else lazy)[name].add(target)
                    target = target.rpartition(".")[0]
    return top, lazy


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on_stack.add(v)
        for w in graph[v]:
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
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_imports_go_one_way_and_close_no_circle():
    top, lazy = _import_graph()
    assert _cycles(top) == []
    upward = []
    for graph in (top, lazy):
        for importer, imported in ((m, t) for m, ts in graph.items() for t in ts):
            a, b = importer.split("."), imported.split(".")
            if len(a) > 1 and len(b) > 1 and a[1] in LAYER and b[1] in LAYER and LAYER[b[1]] > LAYER[a[1]]:
                upward.append(f"{importer} -> {imported}")
    assert upward == []
    assert len(top) > 80  # the walk saw the package


def test_no_file_over_450_lines_and_the_profiling_aids_are_outside_the_package():
    long = {
        str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 450
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
