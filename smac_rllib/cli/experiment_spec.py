"""What ``rllib train`` runs: ``ExperimentSpec``, one experiment of a tuned-example file as checked and built
(``yaml_loader.py``), and ``Overrides``, the command line's values for it (``--config`` / ``--stop``: JSON objects)."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
from typing import Any

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.grids import deep_merge, num_grid_points

# Keys of one experiment (beside config:, not in it).
EXPERIMENT_KEYS = (
    "run", "env", "stop", "config", "num_samples", "checkpoint_config", "storage_path", "max_failures",
    "max_concurrent_trials", "wandb", "scheduler", "warm_up_only", "log_to_file",
)  # fmt: skip
FOREIGN_EXPERIMENT_KEYS = {  # other tools' ways to share settings, Tune keys RLlib makes from the config
    "resources_per_trial": "; RLlib makes a trial's resources from its config: set num_env_runners, num_learners, "
    "num_gpus_per_learner or num_cpus_for_main_process in config",
    "restore": "; a run continues from its newest checkpoint with `rllib train file X.yaml --resume` (same "
    "--storage-path); to evaluate a checkpoint: rllib evaluate CHECKPOINT",
    "search_alg": "; a YAML experiment runs its grid_search points x num_samples: sweep with grid_search (seeds: "
    "seed: {grid_search: [0, 1, 2]}); a Tune search algorithm (Optuna, HyperOpt) needs a Tuner in Python",
    "sync_config": "; Tune 2.x writes straight to the storage path: for a bucket give --storage-path s3://bucket/runs "
    "(or storage_path: in the file)",
    "upload_dir": "; Tune 2.x writes straight to the storage path: give --storage-path s3://bucket/runs",
    "time_budget_s": "; a time budget per trial is a stop criterion: stop: {time_total_s: 3600} (seconds)",
    "fail_fast": "; a failed trial is retried max_failures times (default 2; max_failures: 0 ends it at once) while "
    "the others go on, and the run exits non-zero; Tune's fail_fast is not read here",
    "metric": "; the metric is named where it is used: stop, checkpoint_config.checkpoint_score_attribute or "
    "scheduler: {metric: ...}",
    "mode": "; the order is named where it is used: checkpoint_config.checkpoint_score_order or scheduler: {mode: ...}",
    "resume": "; continue a run with `rllib train file X.yaml --resume` (same --storage-path)",
    "name": "; the experiment's name is its top-level key in the file (and its directory under the storage path)",
    "verbose": "; the progress lines are the CLI's (rllib train file ... -v shows Tune's tables and worker logs)",
    **dict.fromkeys(
        ("algorithm", "algo", "trainer", "run_or_experiment"),
        "; the algorithm is the experiment's `run:` key (e.g. run: SMAC)",
    ),
    **dict.fromkeys(
        ("environment", "env_name", "env_id"),
        "; the env is the experiment's `env:` key (e.g. env: dmc/cartpole-swingup)",
    ),
    "export_formats": "; a checkpoint already holds the torch module (rllib evaluate CHECKPOINT reads it)",
    **dict.fromkeys(
        ("trial_dirname_creator", "trial_name_creator"),
        "; Tune takes a Python function there, which a YAML file cannot hold: trials are named "
        "<run>_<trial id>_<the grid values> (rllib plot reads that name); remove it",
    ),
    "progress_reporter": "; Tune takes a Python object there: the progress lines are the CLI's (-v shows Tune's "
    "tables and worker logs)",
    "reuse_actors": "; each trial builds its own algorithm here (Tune's default for RLlib); remove it",
    "raise_on_failed_trial": "; a failed trial makes the command exit non-zero once the others finish; remove it",
    "resume_config": "; --resume continues the unfinished and errored trials from their last checkpoints (and the "
    "finished ones when the stop was raised); remove it",
    **dict.fromkeys(
        ("tags", "notes", "description"), "; labels for the runs go to W&B: wandb: {tags: [...], notes: ...}"
    ),
    "resources": "; RLlib makes a trial's resources from its config: set num_env_runners, num_learners, "
    "num_gpus_per_learner or num_cpus_for_main_process in config",
    "extends": "; GitLab's extends: is not YAML: anchor the template (`.defaults: &defaults {...}`) and merge it "
    "with `<<: *defaults`",
}


@dataclasses.dataclass
class Overrides:
    """Command-line values that replace (stop, num_samples, storage_path, seed, wandb) or merge into (config) the
    file's."""

    stop: dict | None = None
    config: dict | None = None
    num_samples: int | None = None
    storage_path: str | None = None
    seed: int | None = None
    wandb: bool | None = None  # None: as the file says
    notes: list[str] = dataclasses.field(default_factory=list)  # said once every check passed (train.py)

    @classmethod
    def from_args(cls, args) -> Overrides:
        """``rllib train file``'s arguments (``main.py`` reads them before Ray and torch load)."""
        stop, config = json_args(args.stop, "--stop"), json_args(args.config, "--config")
        if args.storage_path is not None and not args.storage_path.strip():
            raise UserError("--storage-path is empty (an unset shell variable?); pass a directory, or leave it out")
        if args.num_samples is not None and args.num_samples < 1:
            raise UserError(f"--num-samples {args.num_samples} must be >= 1")
        if config and "env_config" in config and config["env_config"] is None:  # replace the file's, or reset it?
            raise UserError(
                '--config {"env_config": null} replaces the file\'s env_config with nothing: write {"env_config": {}} '
                "for the env's defaults, or leave env_config out of --config to keep the file's"
            )
        if args.seed is not None and config and "seed" in config and config["seed"] != args.seed:
            raise UserError(  # argparse would not say which wins: --seed does, silently
                f"--seed {args.seed} and --config seed {json.dumps(config['seed'])} disagree: give the seed once "
                "(--seed N, or sweep it in --config with grid_search)"
            )
        return cls(stop, config, args.num_samples, args.storage_path, args.seed, args.wandb, _stop_notes(args.stop))


def _stop_notes(texts: list[str] | str | None) -> list[str]:
    """``--stop A --stop B`` merge (documented): a criterion given twice with two values is refused (which one was
    meant?); several criteria are said, since each ends the run on its own."""
    if not isinstance(texts, list) or len(texts) < 2:
        return []
    given: dict[str, list] = {}
    for text in texts:
        for key, value in json_arg(text, "--stop").items():
            given.setdefault(key, []).append(value)
    for key, values in given.items():
        if len({json.dumps(v) for v in values}) > 1:
            raise UserError(
                f"--stop gives {key} {len(values)} times ({', '.join(json.dumps(v) for v in values)}); give each "
                "criterion once"
            )
    if len(given) < 2:
        return []
    merged = json.dumps({key: values[-1] for key, values in given.items()})
    return [f"the {len(texts)} --stop flags merge into {merged}: the first criterion met ends the run"]


@dataclasses.dataclass
class ExperimentSpec:
    name: str
    run: str  # the Tune trainable name
    algo_class: type
    param_space: dict  # plain dict for Tune: config keys (+ "env"), {"grid_search": [...]} left in place
    stop: dict[str, float]
    num_samples: int
    checkpoint_config: dict
    storage_path: str | None
    max_failures: int
    max_concurrent_trials: int | None
    wandb: dict | None  # WandbLoggerCallback kwargs, None = off
    scheduler: dict | None  # {"type": "ASHA", ...} or None (FIFO)
    source: str  # the YAML file
    key_lines: dict = dataclasses.field(default_factory=dict)  # config key -> "file:line" (error messages)
    configs: list = dataclasses.field(default_factory=list)  # validated AlgorithmConfig of every grid point
    warm_up_only: bool = False  # a deliberate run of the warm-up alone, no gradient update (cli/horizon.py)
    dropped_stop: dict = dataclasses.field(default_factory=dict)  # the file's stop criteria that --stop replaced
    log_to_file: bool | str | tuple = False  # Tune's: the trials' stdout/stderr into files of their directories

    @property
    def num_trials(self) -> int:
        return self.num_samples * max(1, len(self.configs) if self.configs else num_grid_points(self.param_space))


def json_args(texts: list[str] | str | None, flag: str) -> dict | None:
    """``--config A --config B``: both JSON objects, merged in order (B's values win, nested mappings merge)."""
    if texts is None:
        return None
    merged: dict = {}
    for text in [texts] if isinstance(texts, str) else texts:
        merged = deep_merge(merged, json_arg(text, flag))
    return merged


def json_arg(text: str, flag: str) -> dict:
    """One ``--config``/``--stop`` JSON object; a key given twice in one object is refused, as in the YAML file
    (``json.loads`` would keep the last silently)."""
    try:
        value = json.loads(text, object_pairs_hook=lambda pairs: _unique_keys(pairs, flag))
    except json.JSONDecodeError as e:
        example = '{"training_iteration": 5}' if flag == "--stop" else '{"num_particles": 8}'
        name = text.strip().removeprefix("@")  # curl's and httpie's @file form
        if name.endswith((".json", ".yaml", ".yml")) or os.path.isfile(name):
            raise UserError(
                f"{flag} takes JSON text, not a file name ({name}): write {flag} \"$(cat {name})\" "
                f"for a JSON file, or put the settings in the YAML file; e.g. {flag} '{example}'"
            ) from None
        if not text.strip():
            raise UserError(f"{flag} is empty (an unset shell variable?); write e.g. {flag} '{example}'") from None
        if padded := re.search(r"(?<![\w.\"])-?0\d+(?![\w.\"])", text):  # 007: a zero-padded shell variable
            number = padded.group()
            raise UserError(
                f"{flag}: JSON numbers do not start with 0 ({number}, zero-padded?); write {int(number)}"
            ) from None
        if as_json := _python_dict_as_json(text):  # {"k": False}, {'k': 1}, {"k": None}
            raise UserError(f"{flag} is written as Python, not JSON: write {flag} '{as_json}'") from None
        raise UserError(
            f"{flag} is not valid JSON ({e.msg} at column {e.colno}); write e.g. {flag} '{example}'"
        ) from None
    if not isinstance(value, dict):
        raise UserError(f"{flag} must be a JSON object like '{{\"key\": value}}', got {text!r}")
    if flag == "--stop" and not value:  # it replaces the file's stop: a run without one
        raise UserError(
            "--stop '{}' has no criterion, and --stop replaces the file's stop: the run would have none; drop --stop "
            "to keep the file's, or give one, e.g. --stop '{\"training_iteration\": 5}'"
        )
    return value


def _unique_keys(pairs: list, flag: str) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise UserError(
                f"{flag}: duplicate key {key!r} in one JSON object (JSON keeps the last silently); keep one, or give "
                f"{flag} twice to override a value"
            )
        seen[key] = value
    return seen


# The paper's names of its baselines that are a setting of one of our run: names (docs/baselines.md); keys lowercase,
# without '-', '_' and spaces.
PAPER_RUN_NAMES = {
    "latentsac": "Latent-SAC is run: SMAC with num_particles: 0 (tuned_examples/latent_sac_pixels.yaml)",
    **dict.fromkeys(("flow2", "flow4", "sacflow2", "sacflow4"), "Flow2/Flow4 are run: SACFlow, flow_blocks: 2 or 4"),
    **dict.fromkeys(("moe5", "moe10", "pmoe", "sacmoe5", "sacmoe10"), "MOE5/MOE10 are run: SACMoE, num_experts: 5|10"),
    **dict.fromkeys(("dreamerv1", "dreamer1"), "the paper's Dreamer (DreamerV1) is run: Dreamer"),
}


def paper_run_hint(run: str) -> str:
    """``"Latent-SAC is run: SMAC with num_particles: 0 .... "`` for a paper's baseline name, else ``""``."""
    hint = PAPER_RUN_NAMES.get(re.sub(r"[-_ ]", "", run.lower()), "")
    return f"{hint}. " if hint else ""


def _python_dict_as_json(text: str) -> str | None:
    """``text`` as JSON when it is a Python dict literal that JSON can hold, else None."""
    try:
        value = ast.literal_eval(text)
        return json.dumps(value) if isinstance(value, dict) else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def check_experiment_name(name: Any, body: Any, where: str) -> None:
    """A top-level key names an experiment's directory and holds its mapping; an experiment key written at the top
    (``stop:`` outside any experiment) is said as such."""
    if not isinstance(name, str) or not re.fullmatch(r"[^/\\\x00-\x1f]+", name) or name != name.strip():
        raise UserError(
            f"experiment name {name!r} names a directory: no '/', '\\', control characters or edge spaces", where
        )
    if len(name.encode()) > 255:  # NAME_MAX of Linux and macOS file systems
        raise UserError(
            f"experiment name {name[:40]!r}... is {len(name.encode())} bytes and names a directory, which is at most "
            "255: shorten it",
            where,
        )
    if name in EXPERIMENT_KEYS and not (isinstance(body, dict) and "run" in body):  # `stop:` at the top level
        raise UserError(
            f"{name}: at the top level is read as an experiment named {name!r}; experiment keys go inside an "
            f"experiment, indented under its name (my-run: {{run: SMAC, env: ..., {name}: ...}})",
            where,
        )
    if not isinstance(body, dict):
        raise UserError(f"experiment {name!r} must be a mapping with run, env, stop and config", where)
