"""Grid search in a tuned example: ``{grid_search: [...]}`` at any depth, every point expanded and counted (up to
``MAX_GRID_POINTS``), a misplaced or malformed grid refused in one line."""

from __future__ import annotations

import ast
import copy
import difflib
import itertools
import math
import re
from typing import Any

from smac_rllib.cli.errors import UserError, type_name


def is_grid(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"grid_search"}


def grid_options(value: Any) -> list:
    return list(value["grid_search"]) if is_grid(value) else [value]


MAX_GRID_POINTS = 10_000  # every point is validated (~2 ms each); a bigger sweep is a mistake here


# Tune's search-space markers other than grid_search (sampled spaces): the CLI expands grid_search only
_OTHER_TUNE_MARKERS = ("choice", "uniform", "loguniform", "randint", "grid", "sample_from", "quniform", "randn")


def _near_grid_search(key: str) -> bool:
    """A misspelled ``grid_search`` (``grid_serch``, ``gridsearch``, ``grid-search``) or another Tune marker."""
    k = key.lower().replace("-", "_")
    return key != "grid_search" and (
        k == "grid_search" or k in _OTHER_TUNE_MARKERS or difflib.SequenceMatcher(None, k, "grid_search").ratio() >= 0.8
    )


def check_grids(value: Any, name: str, where: str) -> None:
    """Every ``{grid_search: [...]}`` under ``value`` is alone in its mapping and has a non-empty list."""
    if isinstance(value, dict) and "grid_search" in value:
        options = value["grid_search"]
        if len(value) > 1:
            others = ", ".join(repr(k) for k in value if k != "grid_search")
            raise UserError(
                f"{name}: grid_search must be the only key of its mapping (found {others} next to it); "
                f"write {name}: {{grid_search: [...]}}",
                where,
            )
        if not isinstance(options, list) or not options:
            got = "an empty list" if options == [] else type_name(options)
            raise UserError(
                f"grid_search of {name} needs a non-empty list, e.g. {name}: {{grid_search: [8, 16, 32]}}; got {got}",
                where,
            )
        if any(is_grid(option) for option in options):  # one list says the same trials, and is checked as such
            flat = [v for option in options for v in grid_options(option)]
            raise UserError(
                f"{name}: a grid_search inside a grid_search's list; write the one flat list of its values: "
                f"{name}: {{grid_search: {_yaml(flat)}}}",
                where,
            )
        _check_distinct(options, name, where)
        for option in options:
            check_grids(option, name, where)
    elif isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(key, str) and isinstance(sub, list) and _near_grid_search(key):
                values = _grid_for(key.lower(), sub, name)
                fix = _grid_fix(name, values) if values else f"one value, or {name}: {{grid_search: [a, b]}}"
                raise UserError(
                    f"{name}: {{{key}: {'[...]' if sub else '[]'}}} is not a search space (Tune reads grid_search "
                    f"only{'' if sub else ', and it lists no values'}); write {fix}",
                    where,
                )
            if isinstance(key, str) and key in _OTHER_TUNE_MARKERS and len(value) == 1:  # {sample_from: "lambda .."}
                raise UserError(
                    f"{name}: {{{key}: ...}} is not a search space here (Tune reads grid_search only, and no Python "
                    f"from YAML); write {_grid_fix(name, [1, 2])} with the values to try",
                    where,
                )
            check_grids(sub, f"{name}.{key}", where)
    elif isinstance(value, list):
        for sub in value:
            check_grids(sub, name, where)
    elif isinstance(value, str) and (python := _TUNE_CALL.match(value)):  # "tune.grid_search([1e-3, 3e-4])"
        try:
            args = ast.literal_eval(f"[{python.group(2)}]")
        except (ValueError, SyntaxError):
            args = []
        values = _grid_for(
            python.group(1), args[0] if python.group(1) in ("grid_search", "choice") and args else args, name
        )
        raise UserError(
            f"{name}: {value!r} is Tune's Python API in a string, which YAML does not run; write "
            f"{_grid_fix(name, values or ['a', 'b'])}",
            where,
        )


_TUNE_CALL = re.compile(
    r"^\s*(?:ray\.)?(?:tune\.)?(grid_search|choice|uniform|loguniform|quniform|randint)\((.*)\)\s*$", re.S
)


def _is_seed(name: str) -> bool:
    return name.rsplit(".")[-1] == "seed"


def _grid_fix(name: str, values: list) -> str:
    seeds = " (one trial per seed: num_samples: 1)" if _is_seed(name) else ""
    return f"{name}: {{grid_search: {_yaml(values)}}}{seeds}"


def _grid_for(marker: str, args: Any, name: str) -> list:
    """The ``grid_search`` list that stands for a sampled space: its values (grid_search, choice), the integers of a
    ``randint`` (upper bound excluded, as Tune's), the ends and middle of a ``uniform`` (``loguniform``: geometric);
    a seed's other spaces are swept over 0, 1, 2."""
    args = args if isinstance(args, list) else []
    two = len(args) >= 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in args[:2])
    if marker == "randint" and two and all(type(v) is int for v in args[:2]):
        return list(range(args[0], args[1]))[:10]
    if _is_seed(name):
        return [0, 1, 2]
    if two and all(type(v) is int and v > 0 and v & (v - 1) == 0 for v in args[:2]):  # [2, 16]: 2, 4, 8, 16
        return [2**e for e in range(args[0].bit_length() - 1, args[1].bit_length())][:10]
    if marker in ("uniform", "quniform") and two:
        middle = (args[0] + args[1]) / 2
        return [args[0], int(middle) if all(type(v) is int for v in args[:2]) else middle, args[1]]
    if marker == "loguniform" and two and args[0] > 0 and args[1] > 0:
        return [args[0], float(f"{math.sqrt(args[0] * args[1]):.3g}"), args[1]]
    return args


def _check_distinct(options: list, name: str, where: str) -> None:
    """Each value of a grid once: a repeated one (as parsed: 0 and 0.0 alike, mappings by content) runs trials that
    differ in nothing."""
    seen: dict[Any, int] = {}
    for option in options:
        key = _content(option)
        seen[key] = seen.get(key, 0) + 1
    for option in options:
        times = seen[_content(option)]
        if times > 1:
            counted = "twice" if times == 2 else f"{times} times"
            raise UserError(
                f"grid_search of {name} lists {_yaml(option)} {counted}: {times} identical trials; list each value "
                "once",
                where,
            )


def _content(value: Any) -> Any:
    """A hashable stand-in equal for equal parsed values: numbers by value (0 == 0.0, true is not 1), mappings by
    content whatever their key order, lists by their items."""
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, (int, float)):
        return ("number", value)  # Python's own equality: 0 == 0.0, equal hashes
    if isinstance(value, dict):
        return ("mapping", frozenset((repr(k), _content(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_content(v) for v in value))
    return (type(value).__name__, value if isinstance(value, str) else repr(value))


def _yaml(value: Any) -> str:
    """``0``, ``SMAC``, ``{fcnet_hiddens: [16]}``: a value as the YAML writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml(k)}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return str(value)


def _grid_paths(value: Any, path: tuple = ()):
    if is_grid(value):
        yield path, value["grid_search"]
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _grid_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _grid_paths(v, path + (i,))


def has_grid(value: Any) -> bool:
    """A ``{grid_search: [...]}`` anywhere in ``value``."""
    return next(_grid_paths(value), None) is not None


def num_grid_points(param_space: dict) -> int:
    n = 1
    for _, options in _grid_paths(param_space):
        n *= len(options)
    return n


def grid_variants(param_space: dict, limit: int = MAX_GRID_POINTS) -> list[dict]:
    """The concrete configs of a param space with ``grid_search`` entries (the first ``limit`` of them)."""
    paths = list(_grid_paths(param_space))
    variants = []
    for combo in itertools.islice(itertools.product(*[options for _, options in paths]), limit):
        variant = copy.deepcopy(param_space)
        for (path, _), option in zip(paths, combo, strict=True):
            node = variant
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = copy.deepcopy(option)
        variants.append(variant)
    return variants


def deep_merge(base: dict, override: dict) -> dict:
    """``override`` merged into ``base``: nested mappings merge, a mapping into a grid of mappings merges into each of
    its points (``--config '{"env_config": {"time_limit": 2}}'`` keeps the file's sweep over env_configs), anything
    else (a grid_search too) is replaced."""
    out = dict(base)
    for key, value in override.items():
        mapping = isinstance(value, dict) and not is_grid(value)
        if mapping and isinstance(out.get(key), dict) and not is_grid(out[key]):
            out[key] = deep_merge(out[key], value)
        elif mapping and is_grid(out.get(key)) and all(isinstance(o, dict) for o in out[key]["grid_search"]):
            out[key] = {"grid_search": [deep_merge(o, value) for o in out[key]["grid_search"]]}
        else:
            out[key] = copy.deepcopy(value)
    return out


def check_experiment_keys(body: dict, where_of) -> None:
    """Tune sweeps the param space (config, and env) only: a grid in ``stop``, ``checkpoint_config``, ... is one
    value per experiment, which it would not expand."""
    for key in (k for k in body if k not in ("run", "env", "config") and has_grid(body[k])):
        raise UserError(
            f"{key}: grid_search sweeps config keys (and env) only; {key} is one per experiment: write one value, or "
            "one experiment per value (sharing a template: `<<: *defaults`)",
            where_of(key),
        )


def check_whole_config_grid(config: dict, where: str) -> None:
    """``config: {grid_search: [{...}, {...}]}``: Tune sweeps the values of keys, not whole configs (it would read a
    config key named grid_search). The fix names the keys whose values differ between the variants."""
    if not is_grid(config):
        return
    variants = config["grid_search"]
    if not (isinstance(variants, list) and variants and all(isinstance(v, dict) for v in variants)):
        raise UserError(
            "config: {grid_search: [...]} is not a config; grid a key's values: key: {grid_search: [...]}", where
        )
    keys = list(dict.fromkeys(k for v in variants for k in v))
    differ = [k for k in keys if len({_content(v.get(k)) for v in variants}) > 1]
    grids = "; ".join(f"{k}: {{grid_search: {_yaml([v.get(k) for v in variants])}}}" for k in differ[:3])
    if not differ:
        fix = "its configs are the same: write one"
    elif len(differ) == 1:
        fix = f"write the shared keys once and grid the one that differs: {grids}"
    else:  # several grids cross; variants that move together are experiments
        fix = (
            f"grid the keys that differ ({', '.join(differ)}): each grid crosses the others; for variants that differ "
            "in several keys together, write one experiment per variant (sharing a template: `<<: *defaults`)"
        )
    raise UserError(
        f"config: {{grid_search: [{len(variants)} configs]}} sweeps whole configs, which Tune does not expand (it "
        f"sweeps the values of keys); {fix}",
        where,
    )


def check_shared_grids(config: dict, where_of) -> None:
    """One ``grid_search`` mapping at two keys (a YAML alias, ``actor_lr: &lr {grid_search: ...}`` then
    ``critic_lr: *lr``) reads as "these move together", but Tune crosses every grid: N x N trials, most of them
    mixing the values. ``where_of(top_key)`` names the line."""
    seen: dict[int, str] = {}
    stack: list[tuple[str, str, Any]] = [(str(k), str(k), v) for k, v in config.items()]
    while stack:
        top, name, value = stack.pop(0)
        if is_grid(value):
            if id(value) in seen:
                n = len(grid_options(value))
                raise UserError(
                    f"{name} and {seen[id(value)]} share one grid_search (a YAML alias): Tune crosses the two into "
                    f"{n} x {n} trials, {n * n - n} of them with different values, not {n} trials that move together; "
                    "to tie them, run one experiment per value (merge a template with <<: *defaults); to cross them, "
                    "write the list at both keys",
                    where_of(top),
                )
            seen[id(value)] = name
        elif isinstance(value, dict):
            stack += [(top, f"{name}.{k}", v) for k, v in value.items()]
