"""The configuration checked as a whole, as a property: mutate every tuned example one step at a time (drop a key,
misspell it, move it one level up or down, give a value another type, change a string's case) and load each
mutation as ``rllib train`` does before Ray starts. Each must be accepted or refused with a one-line ``UserError``,
never a traceback; a misspelled or misplaced key and a string in another case must never be accepted (that would be
silence: the user's setting changed nothing, or changed something they did not write).

In-process (``load_experiments``: every check, every grid point, no Ray), a deterministic sample of keys per file.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml

from smac_rllib.cli.errors import UserError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "tuned_examples").glob("*.yaml"))
KEYS_PER_FILE = 6  # config keys sampled per file and operation (deterministic)


def _misspell(key: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(key) - 1) if len(key) > 2 else 0
    swapped = key[:i] + key[i + 1] + key[i] + key[i + 2 :] if len(key) > 2 and key[i] != key[i + 1] else key + "s"
    return swapped if swapped != key else key + "s"


def mutations(path: Path):
    """(description, mutated document, must_refuse) for one tuned example."""
    from smac_rllib.cli.experiment_parts import plain
    from smac_rllib.cli.yaml_reader import read_yaml

    doc = plain(read_yaml(str(path)))  # YAML 1.2 numbers, as rllib reads them (3e-4 is a float)
    rng = random.Random(path.name)
    for name, body in doc.items():
        config = body.get("config", {})
        keys = sorted(k for k in config if k not in ("env", "seed"))
        sample = rng.sample(keys, min(KEYS_PER_FILE, len(keys)))
        for key in sample:
            value = config[key]
            dropped = copy.deepcopy(doc)
            del dropped[name]["config"][key]
            yield f"drop config.{key}", dropped, False
            renamed = copy.deepcopy(doc)
            renamed[name]["config"][_misspell(key, rng)] = renamed[name]["config"].pop(key)
            yield f"misspell config.{key}", renamed, True
            up = copy.deepcopy(doc)
            up[name][key] = up[name]["config"].pop(key)
            yield f"move config.{key} to the experiment", up, True
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                typed = copy.deepcopy(doc)
                typed[name]["config"][key] = str(value) + "x"
                yield f"config.{key} as a string", typed, True
            if isinstance(value, str) and value.swapcase() != value:
                cased = copy.deepcopy(doc)
                cased[name]["config"][key] = value.swapcase()
                yield f"config.{key} in another case", cased, True
        yield from _deep_mutations(doc, name, config, rng)
        for key in [k for k in ("stop", "checkpoint_config") if k in body]:
            down = copy.deepcopy(doc)
            down[name]["config"][key] = down[name].pop(key)
            yield f"move {key} into config", down, True
        env = body.get("env")
        if isinstance(env, str):
            cased = copy.deepcopy(doc)
            cased[name]["env"] = env.upper()
            yield "env in upper case", cased, True


NESTED = ("evaluation_config", "env_config", "replay_buffer_config", "model_config")


def _deep_mutations(doc: dict, name: str, config: dict, rng: random.Random):
    """Mutations below the top level of ``config``: inside nested mappings, inside grid values, a grid over a
    misspelled key. Every one must be refused (each is a setting that would change nothing, or a wrong type that
    would fail after Ray starts)."""
    for block in [b for b in NESTED if isinstance(config.get(b), dict)]:
        keys = sorted(k for k in config[block] if isinstance(k, str) and not isinstance(config[block][k], dict))
        for key in rng.sample(keys, min(2, len(keys))):
            renamed = copy.deepcopy(doc)
            nested = renamed[name]["config"][block]
            nested[_misspell(key, rng)] = nested.pop(key)
            yield f"misspell config.{block}.{key}", renamed, True
            value = config[block][key]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                typed = copy.deepcopy(doc)
                typed[name]["config"][block][key] = str(value) + "x"
                yield f"config.{block}.{key} as a string", typed, True
    for key, value in config.items():
        if isinstance(value, dict) and set(value) == {"grid_search"} and value["grid_search"]:
            first = value["grid_search"][0]
            inside = copy.deepcopy(doc)
            if isinstance(first, dict) and first:
                sub = sorted(first)[0]
                inside[name]["config"][key]["grid_search"][0] = {_misspell(sub, rng): first[sub]}
                yield f"misspell {sub} inside config.{key}'s first grid value", inside, True
            elif isinstance(first, (int, float)) and not isinstance(first, bool):
                inside[name]["config"][key]["grid_search"][0] = str(first) + "x"
                yield f"config.{key}'s first grid value as a string", inside, True
    scalars = sorted(k for k, v in config.items() if k not in ("env", "seed") and isinstance(v, (int, float, str)))
    for key in rng.sample(scalars, min(1, len(scalars))):
        gridded = copy.deepcopy(doc)
        gridded[name]["config"][_misspell(key, rng)] = {"grid_search": [config[key], config[key]]}
        del gridded[name]["config"][key]
        yield f"grid_search over a misspelled config.{key}", gridded, True


def command_line_mutations(path: Path):
    """(description, Overrides, must_refuse): the ``--config`` / ``--stop`` JSON, mutated as the file is."""
    from smac_rllib.cli.experiment_spec import Overrides
    from smac_rllib.cli.experiment_parts import plain
    from smac_rllib.cli.yaml_reader import read_yaml

    doc = plain(read_yaml(str(path)))
    rng = random.Random("cli" + path.name)
    body = next(iter(doc.values()))
    config = body.get("config", {})
    keys = sorted(k for k, v in config.items() if k not in ("env", "seed") and isinstance(v, (int, float, str)))
    for key in rng.sample(keys, min(2, len(keys))):
        yield f"--config misspells {key}", Overrides(config={_misspell(key, rng): config[key]}), True
        if isinstance(config[key], (int, float)) and not isinstance(config[key], bool):
            yield f"--config {key} as a string", Overrides(config={key: str(config[key]) + "x"}), True
    for block in [b for b in NESTED if isinstance(config.get(b), dict) and config[b]]:
        sub = sorted(config[block])[0]
        yield f"--config misspells {block}.{sub}", Overrides(config={block: {_misspell(sub, rng): 1}}), True
        break
    for key, threshold in (body.get("stop") or {}).items():
        yield f"--stop misspells {key}", Overrides(stop={_misspell(key, rng): threshold}), True
        break


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_mutation_is_accepted_or_refused_in_one_line(path, tmp_path, monkeypatch):
    import smac_rllib
    from smac_rllib.cli.yaml_loader import load_experiments

    smac_rllib.register()
    monkeypatch.chdir(tmp_path)
    counts = {"tried": 0, "refused": 0, "accepted": 0}
    silent = []
    cases = [(d, tmp_path / path.name, doc, None, refuse) for d, doc, refuse in mutations(path)]
    cases += [(d, path, None, overrides, refuse) for d, overrides, refuse in command_line_mutations(path)]
    for description, file, doc, overrides, must_refuse in cases:
        if doc is not None:
            file.write_text(yaml.safe_dump(doc, sort_keys=False))
        counts["tried"] += 1
        try:
            load_experiments(str(file), overrides)
        except UserError as e:
            counts["refused"] += 1
            assert "\n" not in str(e), (description, str(e))
            continue
        counts["accepted"] += 1
        if must_refuse:
            silent.append(description)
    print(
        f"\n{path.name}: {counts}"
    )  # all tuned examples, 2026-11-27: 776 tried, 602 refused, 174 accepted (the drops)
    assert counts["tried"] >= 5
    assert silent == [], f"{path.name}: accepted without a word: {silent}"
