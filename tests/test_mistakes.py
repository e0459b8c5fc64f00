"""A new user's mistakes, table-driven: each ends with exit code 2 and one short line that names the fix.

Every mistake runs in-process through ``main()`` with ``--dry-run`` (all the checks, never a run): exit code 2,
at most 3 stderr lines (one, in practice), no "Traceback", the expected words in the message, and Ray not
started. Files are written from small strings: ``BASE`` is a tiny state SMAC experiment and each row changes
one thing in it. Categories: numeric ranges of every config field (RLlib's and ours), NaN/inf anywhere,
env_config of the dmc envs, stop criteria no result contains, Tune pieces (scheduler, grid_search, big grids),
command-line arguments, YAML robustness (encoding, alias bombs, deep nesting, mapping keys).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import time
from pathlib import Path
from collections.abc import Callable

import pytest

from smac_rllib.cli.experiment_spec import Overrides
from smac_rllib.cli.main import main
from smac_rllib.cli.yaml_loader import load_experiments

BASE = """\
# Test-only: a tiny state SMAC experiment; every row of MISTAKES changes one thing in it.
tiny:
  run: SMAC
  env: dmc/cartpole-balance
  stop: {training_iteration: 2}
  max_failures: 0
  config:
    env_config: {time_limit: 1.0}
    seed: 0
    num_env_runners: 0
    rollout_fragment_length: 50
    min_sample_timesteps_per_iteration: 100
    num_steps_sampled_before_learning_starts: 100
    train_batch_size_per_learner: 16
    num_particles: 4
    latent_dim: 4
    hidden_dim: 16
    critic_hidden_dim: 16
    evaluation_interval: 2
    evaluation_duration: 1
    evaluation_config: {explore: false}
"""


def without_state_keys(text: str) -> str:
    """``text`` without the state networks' keys, which a pixel run refuses (it would ignore them)."""
    for key in ("latent_dim", "hidden_dim", "critic_hidden_dim", "train_batch_size_per_learner"):
        text = re.sub(rf"^    {key}: .*\n", "", text, flags=re.M)
    return text


def _set_line(text: str, indent: str, line: str, after: str) -> str:
    """``line`` (``key: value``) replaces the line of the same key at ``indent``, or goes right after ``after``."""
    key = line.split(":")[0]
    pattern = re.compile(rf"^{indent}{re.escape(key)}:.*$", re.M)
    if pattern.search(text):
        return pattern.sub(lambda _: indent + line, text, count=1)
    return text.replace(after, after + indent + line + "\n", 1)


# RLlib's own SAC, whose default module reads RLlib's model_config keys (fcnet_hiddens, ...); config lines follow.
SAC_PENDULUM = (
    "bad:\n  run: SAC\n  env: Pendulum-v1\n  stop: {training_iteration: 1}\n  config:\n    num_env_runners: 0\n"
)


# A SACBaseline experiment to put beside BASE's SMAC one (without SMAC's own keys).
SAC_BESIDE = "".join(
    line + "\n"
    for line in BASE.replace("tiny:", "sac:").replace("run: SMAC", "run: SACBaseline").splitlines()[1:]
    if not line.strip().startswith(("num_particles", "latent_dim", "critic_hidden_dim"))
)


def cfg(*lines: str) -> str:
    """BASE with config keys set (``"gamma: 0"``)."""
    text = BASE
    for line in lines:
        text = _set_line(text, "    ", line, "  config:\n")
    return text


def exp(*lines: str) -> str:
    """BASE with experiment keys set (``"scheduler: {...}"``, ``"stop: {...}"``, ``"env: X"``)."""
    text = BASE
    for line in lines:
        text = _set_line(text, "  ", line, "  run: SMAC\n")
    return text


def envc(entries: str) -> str:
    """BASE with ``env_config: {<entries>}``."""
    return cfg(f"env_config: {{time_limit: 1.0, {entries}}}")


def _other_run(run: str) -> str:
    """BASE as another of our algorithms (without SMAC's own keys)."""
    return "".join(
        line + "\n"
        for line in BASE.replace("run: SMAC", f"run: {run}").splitlines()
        if not line.strip().startswith(("num_particles", "latent_dim", "critic_hidden_dim"))
    )


@dataclasses.dataclass
class Mistake:
    yaml: str | bytes | Callable[[], str | bytes] = BASE
    args: tuple = ()  # after `rllib train file <the yaml>`; "{file}" is an existing file, "{dir}" the test's directory
    expect: str = ""  # a part of the one error line
    command: tuple = ("train", "file", "{yaml}")  # ("evaluate", "{dir}") for evaluate's arguments


def big_grid(n: int = 150) -> str:
    """A grid of 3 x ``n`` points (estimator varies slowest): num_particles=6 is wrong for the last third only
    (mlmc needs a power of two), past the first 256 points."""
    return cfg(
        f"latent_dim: {{grid_search: {list(range(1, n + 1))}}}",
        "num_particles: 6",
        "estimator: {grid_search: [nested, naive, mlmc]}",
    )


# "billion laughs": 10 lines that expand to 10**9 values (memory and time without a cap)
BILLION_LAUGHS = cfg(
    "callbacks_on_train_result: *i",
    *(f"x{i}: &{chr(97 + i)} [{', '.join([('*' + chr(96 + i)) if i else 'lol'] * 10)}]" for i in reversed(range(9))),
)

PIXELS_QUICK = Path(__file__).resolve().parents[1] / "tuned_examples" / "smac_pixels_quick.yaml"
PIXELS_TO_TD3 = """\
# Test-only: a state-only algorithm given pixel observations
tiny:
  run: TD3
  env: dmc/cartpole-balance
  stop: {training_iteration: 2}
  config:
    env_config: {time_limit: 1.0, from_pixels: true}
    num_env_runners: 0
"""

MISTAKES: dict[str, Mistake] = {
    # ---- numeric ranges of RLlib's own config fields
    "gamma 0": Mistake(cfg("gamma: 0"), expect="gamma=0 must be in (0, 1]"),
    "gamma above 1": Mistake(cfg("gamma: 1.5"), expect="gamma=1.5 must be in (0, 1]"),
    "tau 0": Mistake(cfg("tau: 0"), expect="tau=0 must be in (0, 1]"),
    "tau above 1": Mistake(cfg("tau: 2"), expect="tau=2 must be in (0, 1]"),
    "batch size 0": Mistake(
        cfg("train_batch_size_per_learner: 0"), expect="train_batch_size_per_learner=0 must be >= 1"
    ),
    "num_env_runners negative": Mistake(cfg("num_env_runners: -1"), expect="num_env_runners=-1 must be >= 0"),
    "rollout_fragment_length 0": Mistake(
        cfg("rollout_fragment_length: 0"), expect="rollout_fragment_length=0 must be >= 1"
    ),
    "replay capacity below batch": Mistake(
        cfg("replay_buffer_config: {type: EpisodeReplayBuffer, capacity: 8}"),
        expect="capacity=8 must be >= the batch size",
    ),
    "replay capacity 0": Mistake(
        cfg("replay_buffer_config: {type: EpisodeReplayBuffer, capacity: 0}"), expect="capacity=0"
    ),
    "min_sample_timesteps negative": Mistake(
        cfg("min_sample_timesteps_per_iteration: -5"), expect="min_sample_timesteps_per_iteration=-5 must be >= 0"
    ),
    "evaluation_interval negative": Mistake(
        cfg("evaluation_interval: -1"), expect="evaluation_interval=-1 must be >= 0"
    ),
    "evaluation_duration 0": Mistake(cfg("evaluation_duration: 0"), expect="evaluation_duration=0"),
    "num_learners negative": Mistake(cfg("num_learners: -1"), expect="num_learners=-1 must be >= 0"),
    "num_gpus_per_learner negative": Mistake(
        cfg("num_gpus_per_learner: -1"), expect="num_gpus_per_learner=-1 must be >= 0"
    ),
    "num_cpus_per_env_runner negative": Mistake(
        cfg("num_cpus_per_env_runner: -1"), expect="num_cpus_per_env_runner=-1 must be >= 0"
    ),
    "num_envs_per_env_runner 0": Mistake(
        cfg("num_envs_per_env_runner: 0"), expect="num_envs_per_env_runner=0 must be >= 1"
    ),
    "n_step 0": Mistake(cfg("n_step: 0"), expect="n_step=0 must be >= 1"),
    "grad_clip negative": Mistake(cfg("grad_clip: -1.0"), expect="grad_clip=-1.0 must be > 0"),
    "seed negative": Mistake(cfg("seed: -1"), expect="seed=-1 must be in [0, 2**32)"),
    "target_network_update_freq negative": Mistake(
        cfg("target_network_update_freq: -1"), expect="target_network_update_freq=-1 must be >= 0"
    ),
    "min_time_s negative": Mistake(
        cfg("min_time_s_per_iteration: -1"), expect="min_time_s_per_iteration=-1 must be >= 0"
    ),
    "evaluation_num_env_runners negative": Mistake(
        cfg("evaluation_num_env_runners: -2"), expect="evaluation_num_env_runners=-2 must be >= 0"
    ),
    "metrics smoothing 0": Mistake(
        cfg("metrics_num_episodes_for_smoothing: 0"), expect="metrics_num_episodes_for_smoothing=0 must be >= 1"
    ),
    "learning starts negative (SMAC's own)": Mistake(
        cfg("num_steps_sampled_before_learning_starts: -1"), expect="num_steps_sampled_before_learning_starts=-1"
    ),
    "updates_per_env_step 0 (SMAC's own)": Mistake(
        cfg("updates_per_env_step: 0"), expect="updates_per_env_step=0 must be in [0.01, 64]"
    ),
    "torch_num_threads negative": Mistake(cfg("torch_num_threads: -1"), expect="torch_num_threads=-1 must be >= 0"),
    "nonfinite updates 0": Mistake(
        cfg("max_consecutive_nonfinite_updates: 0"), expect="max_consecutive_nonfinite_updates=0 must be >= 1"
    ),
    "evaluation_config gamma": Mistake(
        cfg("evaluation_config: {explore: false, gamma: 2}"),
        expect="evaluation_config.gamma: the evaluation runs the trained policy and never trains",
    ),
    # ---- NaN / inf anywhere
    "gamma NaN": Mistake(cfg("gamma: .nan"), expect="gamma=nan is not a finite number"),
    "tau inf": Mistake(cfg("tau: .inf"), expect="tau=inf is not a finite number"),
    "inf capacity": Mistake(
        cfg("replay_buffer_config: {type: EpisodeReplayBuffer, capacity: .inf}"),
        expect="replay_buffer_config.capacity=inf is not a finite number",
    ),
    "NaN in a grid": Mistake(
        cfg("actor_lr: {grid_search: [0.0003, .nan]}"), expect="actor_lr=nan is not a finite number"
    ),
    "NaN in env_config": Mistake(
        envc("pixel_noise_std: .nan, from_pixels: true"), expect="env_config.pixel_noise_std=nan is not a finite number"
    ),
    "NaN in --config": Mistake(args=("--config", '{"gamma": NaN}'), expect="gamma=nan is not a finite number"),
    "inf in --stop": Mistake(
        args=("--stop", '{"training_iteration": Infinity}'), expect="training_iteration=inf is not a finite number"
    ),
    # ---- env_config of the dmc envs
    "action_repeat 0": Mistake(envc("action_repeat: 0"), expect="env_config.action_repeat=0 must be an integer >= 1"),
    "time_limit 0": Mistake(cfg("env_config: {time_limit: 0}"), expect="env_config.time_limit=0 must be > 0"),
    "env seed negative": Mistake(envc("seed: -3"), expect="env_config.seed=-3 must be in [0, 2**32)"),
    "env seed too big": Mistake(envc("seed: 4294967296"), expect="env_config.seed=4294967296 must be in [0, 2**32)"),
    "camera_id out of range": Mistake(envc("from_pixels: true, camera_id: 99"), expect="env_config.camera_id=99"),
    "camera_id negative": Mistake(envc("from_pixels: true, camera_id: -1"), expect="env_config.camera_id=-1"),
    "pixel noise negative": Mistake(
        envc("from_pixels: true, pixel_noise_std: -0.1"), expect="pixel_noise_std=-0.1 must be"
    ),
    "sensor missing above 1": Mistake(
        envc("from_pixels: true, sensor_missing_prob: 1.5"),
        expect="sensor_missing_prob=1.5 must be a probability in [0, 1]",
    ),
    "sensor missing without pixels": Mistake(envc("sensor_missing_prob: 0.05"), expect="set from_pixels: true"),
    "camera_id without pixels": Mistake(
        envc("camera_id: 1"), expect="camera_id applies to pixel observations only; set from_pixels: true"
    ),
    "image_size without pixels": Mistake(
        envc("image_size: 64"), expect="image_size applies to pixel observations only"
    ),
    "image_size 0": Mistake(
        envc("from_pixels: true, image_size: 0"), expect="env_config.image_size=0 must be an integer >= 1"
    ),
    "render_mode unknown": Mistake(envc("render_mode: human"), expect="render_mode='human'"),
    "render_size 0": Mistake(envc("render_size: 0"), expect="env_config.render_size=0 must be an integer >= 1"),
    "from_pixels as a string": Mistake(envc('from_pixels: "false"'), expect="without quotes"),
    "integer setting beyond int32": Mistake(
        cfg("hidden_dim: 1e12"), expect="hidden_dim=1e+12 is beyond any size a run can use"
    ),
    "fragment that never ends": Mistake(
        cfg("rollout_fragment_length: 1000000000000"), expect="rollout_fragment_length=1e+12 is beyond"
    ),
    "an env runner per CPU x 1000": Mistake(
        cfg("num_env_runners: 2000"), expect="a local Ray runs at most 8x oversubscribed"
    ),
    # keys that do nothing, values RLlib would take as another choice,
    # contradictions (a configuration checked as a whole)
    "old-stack num_gpus": Mistake(
        cfg("num_gpus: 1"),
        expect="num_gpus=1 is an RLlib old-API-stack setting this algorithm never reads; use num_gpus_per_learner",
    ),
    "old-stack train_batch_size": Mistake(
        cfg("train_batch_size: 64"), expect="train_batch_size=64 is an RLlib old-API-stack setting"
    ),
    "old-stack model": Mistake(
        cfg("model: {fcnet_hiddens: [64]}"), expect="model={'fcnet_hiddens': [64]} is an RLlib old-API-stack setting"
    ),
    "replay type not read": Mistake(
        cfg("replay_buffer_config: {type: PrioritizedEpisodeReplayBuffer, capacity: 1000}"),
        expect="replay_buffer_config.type='PrioritizedEpisodeReplayBuffer' is not read",
    ),
    "pixel key in a state run": Mistake(
        cfg("world_model_preset: tiny"),
        expect="world_model_preset='tiny' is a pixel setting (Alg. 2) and this run learns from states",
    ),
    "state key in a pixel run": Mistake(
        cfg("env_config: {time_limit: 1.0, from_pixels: true}"), expect="latent_dim=4 does nothing in a pixel run"
    ),
    "evaluation_interval inside evaluation_config": Mistake(
        cfg("evaluation_config: {explore: false, evaluation_interval: 5}"),
        expect="RLlib reads evaluation_interval only at the top of config",
    ),
    "placement strategy in lower case": Mistake(
        cfg("placement_strategy: pack"),
        expect="placement_strategy='pack' is not a value RLlib knows (PACK, SPREAD, STRICT_PACK, STRICT_SPREAD); write "
        "'PACK'",
    ),
    "duration unit capitalized": Mistake(
        cfg("evaluation_duration_unit: Episodes"),
        expect="evaluation_duration_unit='Episodes' is not a value RLlib knows",
    ),
    "stop at zero": Mistake(
        BASE.replace("stop: {training_iteration: 2}", "stop: {training_iteration: 0}"),
        expect="stop criterion training_iteration=0 ends the run before its first iteration",
    ),
    "evaluation on pixels, training on states": Mistake(
        cfg("evaluation_config: {explore: false, env_config: {from_pixels: true}}"),
        expect="evaluation_config.env_config.from_pixels=True evaluates on pixels a policy trained on states",
    ),
    "time_limit below one step": Mistake(
        cfg("env_config: {time_limit: 0.001}"), expect="env_config.time_limit=0.001 is shorter than one agent step"
    ),
    "time_limit meant in steps": Mistake(
        cfg("env_config: {time_limit: 5000}"),
        expect="env_config.time_limit=5000.0 s is 500x the 10 s episode of dmc/cartpole-balance (500,000 agent steps): "
        "time_limit counts simulated seconds, not steps; e.g. 10 for the task's own 1,000 steps",
    ),
    "checkpoint score on an evaluation that never runs": Mistake(
        BASE.replace(
            "  max_failures: 0\n",
            "  max_failures: 0\n  checkpoint_config: {checkpoint_score_attribute: "
            "evaluation/env_runners/episode_return_mean}\n",
        ).replace("    evaluation_interval: 2\n", ""),
        expect="checkpoint_score_attribute 'evaluation/env_runners/episode_return_mean' is reported only when the "
        "experiment evaluates",
    ),
    "--resume with nothing to resume": Mistake(
        args=("--resume", "--storage-path", "{dir}"), expect="--resume: nothing to resume, no Tune experiment state in"
    ),
    "plot into a text file": Mistake(
        command=("plot", "{dir}"), args=("--out", "curves.txt"), expect="--out curves.txt: write the plot to a .png"
    ),
    "a bucket URI with one slash": Mistake(
        args=("--storage-path", "s3:/my-bucket/runs"),
        expect="storage path s3:/my-bucket/runs is not a URI (a local directory named 's3:'); write s3://my-bucket/runs",
    ),
    "storage on an unknown URI scheme": Mistake(
        args=("--storage-path", "ftp://host/runs"), expect="storage path ftp://host/runs: Tune cannot write to ftp://"
    ),
    "grid_search misspelled": Mistake(
        cfg("latent_dim: {grid_serch: [4, 8]}"),
        expect="latent_dim: {grid_serch: [...]} is not a search space (Tune reads grid_search only)",
    ),
    "grid-search inside env_config": Mistake(
        cfg("env_config: {time_limit: {grid-search: [1.0, 2.0]}}"),
        expect="env_config.time_limit: {grid-search: [...]} is not a search space",
    ),
    "an empty sampled Tune space": Mistake(
        cfg("actor_lr: {choice: []}"),
        expect="actor_lr: {choice: []} is not a search space (Tune reads grid_search only, and it lists no values); "
        "write one value, or actor_lr: {grid_search: [a, b]}",
    ),
    "a sampled Tune space": Mistake(
        cfg("actor_lr: {loguniform: [1e-4, 1e-3]}"), expect="actor_lr: {loguniform: [...]} is not a search space"
    ),
    "training_intensity instead of updates_per_env_step": Mistake(
        cfg("training_intensity: 2"),
        expect="training_intensity=2 is RLlib SAC's replay ratio, which this loop never reads; "
        "use updates_per_env_step",
    ),
    "n-step returns": Mistake(cfg("n_step: 3"), expect="n_step=3 cannot be honoured"),
    "async metric in a synchronous run": Mistake(
        BASE.replace("stop: {training_iteration: 2}", "stop: {async/updates_per_s: 100}").replace(
            "    seed: 0\n", "    seed: 0\n    async_learning: false\n"
        ),
        expect="'async/updates_per_s' is reported by the asynchronous loop only",
    ),
    "learner metric of a module that does not exist": Mistake(
        BASE.replace("stop: {training_iteration: 2}", "stop: {learners/default_polcy/critic/loss: 0.1}"),
        expect="names learner module 'default_polcy', which no result holds",
    ),
    "SMAC on a discrete env": Mistake(
        exp("env: CartPole-v1").replace("    env_config: {time_limit: 1.0}\n", ""),
        expect="needs a continuous (Box) action space",
    ),
    # ---- stop criteria that no result contains
    "stop typo": Mistake(exp("stop: {training_iterations: 5}"), expect="did you mean 'training_iteration'?"),
    "stop nested typo": Mistake(
        exp("stop: {env_runners/episode_return_meen: 100}"), expect="did you mean 'env_runners/episode_return_mean'?"
    ),
    "stop unknown group": Mistake(
        exp("stop: {env_runner/num_env_steps_sampled_lifetime: 1000}"),
        expect="did you mean 'env_runners/num_env_steps_sampled_lifetime'?",
    ),
    "stop typo in --stop": Mistake(
        args=("--stop", '{"training_iteratoin": 5}'), expect="did you mean 'training_iteration'?"
    ),
    "stop NaN": Mistake(exp("stop: {training_iteration: .nan}"), expect="not a finite number"),
    "stop string bool": Mistake(exp('stop: {training_iteration: "5"}'), expect="must be a number"),
    # ---- Tune: scheduler, grid_search, big grids, experiment keys
    "ASHA grace_period 0": Mistake(
        exp("scheduler: {type: ASHA, grace_period: 0}"), expect="grace_period=0 must be an integer >= 1"
    ),
    "ASHA mode": Mistake(exp("scheduler: {type: ASHA, mode: maximize}"), expect="mode='maximize'; use 'max' or 'min'"),
    "ASHA reduction_factor 1": Mistake(
        exp("scheduler: {type: ASHA, reduction_factor: 1}"), expect="reduction_factor=1 must be > 1"
    ),
    "ASHA max_t 0": Mistake(exp("scheduler: {type: ASHA, max_t: 0}"), expect="max_t=0 must be an integer >= 1"),
    "ASHA max_t null": Mistake(
        exp("scheduler: {type: ASHA, max_t: null}"), expect="max_t=None must be an integer >= 1"
    ),
    "ASHA grace above max_t": Mistake(
        exp("scheduler: {type: ASHA, grace_period: 20, max_t: 10}"), expect="grace_period=20 must be <= max_t=10"
    ),
    "ASHA metric typo": Mistake(
        exp("scheduler: {type: ASHA, metric: env_runners/episode_return_meen}"),
        expect="did you mean 'env_runners/episode_return_mean'?",
    ),
    "ASHA time_attr typo": Mistake(
        exp("scheduler: {type: ASHA, time_attr: training_iterations}"), expect="did you mean 'training_iteration'?"
    ),
    "grid_search empty": Mistake(cfg("latent_dim: {grid_search: []}"), expect="needs a non-empty list"),
    "grid_search not a list": Mistake(cfg("latent_dim: {grid_search: 8}"), expect="needs a non-empty list"),
    "grid_search a mapping": Mistake(cfg("latent_dim: {grid_search: {a: 8}}"), expect="needs a non-empty list"),
    "grid_search bad value past 256 points": Mistake(
        big_grid(), expect="num_particles=6 must be 0 or a power of two for estimator='mlmc'"
    ),
    "grid_search with a sibling key": Mistake(
        cfg("latent_dim: {grid_search: [4, 8], values: [16]}"), expect="grid_search must be the only key"
    ),
    "grid over 10000 trials": Mistake(big_grid(4000), expect="more than 10,000"),
    "num_samples 0": Mistake(exp("num_samples: 0"), expect="num_samples=0 must be an integer >= 1"),
    "max_concurrent_trials 0": Mistake(
        exp("max_concurrent_trials: 0"), expect="max_concurrent_trials=0 must be an integer >= 1"
    ),
    "max_concurrent_trials true": Mistake(
        exp("max_concurrent_trials: true"), expect="max_concurrent_trials=True must be an integer >= 1"
    ),
    "checkpoint_at_end string": Mistake(
        exp('checkpoint_config: {checkpoint_at_end: "false"}'), expect="checkpoint_at_end='false' must be true or false"
    ),
    "checkpoint_score_order": Mistake(
        exp("checkpoint_config: {checkpoint_score_order: up}"), expect="checkpoint_score_order='up'; use 'max' or 'min'"
    ),
    "checkpoint_score_attribute typo": Mistake(
        exp("checkpoint_config: {checkpoint_score_attribute: training_iterations}"),
        expect="did you mean 'training_iteration'?",
    ),
    "max_failures -2": Mistake(exp("max_failures: -2"), expect="max_failures=-2 must be an integer >= -1"),
    # ---- command-line arguments
    "--seed negative": Mistake(args=("--seed", "-1"), expect="argument --seed: -1 must be in [0, 2**32)"),
    "--seed too big": Mistake(args=("--seed", str(2**32)), expect="argument --seed: 4294967296 must be in [0, 2**32)"),
    "--seed not a number": Mistake(args=("--seed", "one"), expect="argument --seed: 'one' is not an integer"),
    "--storage-path a file": Mistake(args=("--storage-path", "{file}"), expect="is a file"),
    "--storage-path not writable": Mistake(
        args=("--storage-path", "/proc/smac_rllib_results"), expect="cannot write to /proc"
    ),
    "--config env typo": Mistake(
        args=("--config", '{"env": "dmc/cartpole-balanse"}'), expect="did you mean dmc/cartpole-balance"
    ),
    "--config string bool": Mistake(
        args=("--config", '{"twin_q": "false"}'), expect="twin_q='false' has the wrong type"
    ),
    "--config string bool in evaluation_config": Mistake(
        args=("--config", '{"evaluation_config": {"explore": "false"}}'),
        expect="evaluation_config.explore='false' has the wrong type",
    ),
    "--num-samples 0": Mistake(args=("--num-samples", "0"), expect="--num-samples 0 must be >= 1"),
    "--config not an object": Mistake(args=("--config", "[1]"), expect="--config must be a JSON object"),
    "second --config has the mistake": Mistake(
        args=("--config", '{"gamma": 0.9}', "--config", '{"tau": 0}'), expect="tau=0 must be in (0, 1]"
    ),
    "string bool for a SMAC setting": Mistake(
        cfg('mlmc_average_level0: "false"'), expect="mlmc_average_level0='false' has the wrong type"
    ),
    "string bool for wandb.log_config": Mistake(
        exp('wandb: {log_config: "no"}'), expect="wandb.log_config='no' must be true or false"
    ),
    "wandb mode": Mistake(exp("wandb: {mode: offlin}"), expect="wandb.mode='offlin'; use online, offline or disabled"),
    "storage_path in the file is a file": Mistake(exp("storage_path: a_file/results"), expect="a_file is a file"),
    "evaluate --episodes 0": Mistake(
        command=("evaluate", "{dir}"), args=("--episodes", "0"), expect="argument --episodes: 0 must be >= 1"
    ),
    "evaluate --video-size 0": Mistake(
        command=("evaluate", "{dir}"),
        args=("--video-size", "0"),
        expect="argument --video-size: 0 must be in [16, 4097)",
    ),
    "evaluate given the tuned-example file": Mistake(
        command=("evaluate", "{yaml}"),
        expect="mistake.yaml is a file; rllib evaluate takes a checkpoint_* directory, or a trial or experiment "
        "directory under the run's storage path (~/ray_results/<experiment> by default) (train it first: rllib train "
        "file ",
    ),
    "Tune's older checkpoint key beside the new one": Mistake(
        exp("checkpoint_freq: 1", "checkpoint_config: {checkpoint_frequency: 2}"),
        expect="checkpoint_freq is Tune's older name of checkpoint_config.checkpoint_frequency, and "
        "checkpoint_config.checkpoint_frequency is set too; keep one",
    ),
    "one evaluation episode longer than ten times the training between evaluations": Mistake(
        cfg("env_config: {time_limit: 50.0}"),
        expect="(evaluating would take longer than training); one episode is 5,000 steps: shorten the episodes",
    ),
    "a sweep of replay capacities that all hold the whole run": Mistake(
        cfg("replay_buffer_config: {capacity: {grid_search: [1000, 100000]}}"),
        expect="replay_buffer_config.capacity=1000 is at least the run's 200 env steps (it keeps every one)",
    ),
    "an action repeat that spans the whole episode": Mistake(
        envc("action_repeat: 100"),
        expect="env_config.action_repeat=100 spans the whole episode of dmc/cartpole-balance (100 control steps)",
    ),
    "--config setting the key the file sweeps": Mistake(
        cfg("num_particles: {grid_search: [2, 4]}"),
        args=("--config", '{"num_particles": 8}'),
        expect="sets a key the file sweeps in every point of the sweep: its 2 trials would be 1 run(s) under 2 labels",
    ),
    "Tune's restore key": Mistake(exp("restore: /tmp/x"), expect="unknown experiment key 'restore'; a run continues"),
    "key:value without a space": Mistake(
        BASE.replace("    num_particles: 4", "    num_particles:4"), expect="`num_particles:4` needs a space after ':'"
    ),
    "a YAML !include tag": Mistake(cfg("env_config: !include env.yaml"), expect="the tag !include is not read here"),
    "one experiment's keys at the top level": Mistake(
        "run: SMAC\nenv: dmc/cartpole-balance\nstop: {training_iteration: 2}\n",
        expect="the file's top level holds one experiment's keys (run, env, stop): put them under an experiment name",
    ),
    "--resume with Tune's resume mode": Mistake(args=("--resume", "AUTO"), expect="--resume takes no value (AUTO is"),
    "--config naming a JSON file": Mistake(
        args=("--config", "overrides.json"), expect="--config takes JSON text, not a file name (overrides.json)"
    ),
    "RLlib's rollout command": Mistake(command=("rollout", "{dir}"), expect="`rllib rollout` is RLlib's older command"),
    "checkpoints ranked by iteration, min": Mistake(
        exp("checkpoint_config: {checkpoint_score_attribute: training_iteration, checkpoint_score_order: min}"),
        expect="checkpoint_config ranks training_iteration with checkpoint_score_order: min: num_to_keep: 2 keeps the "
        "oldest checkpoints",
    ),
    "checkpoints ranked but none saved": Mistake(
        exp(
            "checkpoint_config: {checkpoint_frequency: 0, checkpoint_at_end: false, "
            "checkpoint_score_attribute: env_runners/episode_return_mean}"
        ),
        expect="but none is saved (checkpoint_frequency: 0, checkpoint_at_end: false)",
    ),
    "ASHA's first rung inside the warm-up": Mistake(
        exp(
            "stop: {env_runners/num_env_steps_sampled_lifetime: 400}",
            "scheduler: {type: ASHA, time_attr: env_runners/num_env_steps_sampled_lifetime, "
            "metric: env_runners/episode_return_mean, mode: max, max_t: 400, grace_period: 50}",
        ).replace("    num_particles: 4", "    num_particles: {grid_search: [2, 4]}"),
        expect="ASHA's first rung (scheduler grace_period=50 env_runners/num_env_steps_sampled_lifetime) compares "
        "trials at 50 env steps, inside the 100-step uniform random warm-up",
    ),
    "algorithm: instead of run:": Mistake(
        exp("algorithm: SMAC"), expect="the algorithm is the experiment's `run:` key"
    ),
    "RLlib's old API stack asked for": Mistake(
        cfg("enable_rl_module_and_learner: false"), expect="asks for RLlib's old API stack; SMAC runs on the new API"
    ),
    "observation_filter of the old stack": Mistake(
        cfg("observation_filter: MeanStdFilter"), expect="observation_filter='MeanStdFilter' is an RLlib old-API-stack"
    ),
    "a URL for the file": Mistake(
        command=("train", "file", "https://example.com/smac_state.yaml"),
        expect="rllib train file reads a local file, not a URL (https://example.com/smac_state.yaml); download it",
    ),
    "JSON with // comments": Mistake(
        '{\n  // the tiny run\n  "tiny": {"run": "SMAC"}\n}\n',
        expect="// and /* */ comments are neither JSON nor YAML; start a comment with # (YAML)",
    ),
    "W&B entity/project as the project": Mistake(
        exp("wandb: {project: me/smac}"),
        expect="wandb.project='me/smac': a W&B project name cannot hold /; the part before '/' is the entity: entity: "
        "me, project: smac",
    ),
    "RLlib's removed horizon": Mistake(
        cfg("horizon: 200"), expect="unknown config key 'horizon' for SMAC; RLlib removed"
    ),
    "Tune's search_alg key": Mistake(
        exp("search_alg: {type: optuna}"), expect="unknown experiment key 'search_alg'; a YAML experiment runs its grid"
    ),
    "Tune 1.x sync_config with an upload_dir": Mistake(
        exp("sync_config: {upload_dir: 's3://bucket/runs'}"), expect="for a bucket give --storage-path s3://bucket/runs"
    ),
    "tune.run's time_budget_s": Mistake(exp("time_budget_s: 600"), expect="is a stop criterion: stop: {time_total_s: "),
    "tune.run's fail_fast": Mistake(exp("fail_fast: true"), expect="retried max_failures times (default 2; max_fail"),
    "an iteration's minimum past the stop": Mistake(
        cfg("min_sample_timesteps_per_iteration: 1000").replace(
            "stop: {training_iteration: 2}", "stop: {env_runners/num_env_steps_sampled_lifetime: 200}"
        ),
        expect="min_sample_timesteps_per_iteration: 1,000 env steps per iteration, past the stop",
    ),
    "two YAML files": Mistake(command=("train", "file", "{yaml}", "{yaml}"), expect="one YAML file per command"),
    "Tune's --local-dir flag": Mistake(
        args=("--local-dir", "{dir}"), expect="rllib train file has no --local-dir: Tune's older name: write --storage"
    ),
    "RLlib's --framework flag": Mistake(args=("--framework=torch",), expect="rllib train file has no --framework"),
    "a pixel height in env_config": Mistake(envc("height: 84"), expect="key 'height'; did you mean 'image_size'?"),
    "gym's frame_skip in env_config": Mistake(envc("frame_skip: 4"), expect="did you mean 'action_repeat'?"),
    "a duration string as a time stop": Mistake(exp("stop: {time_total_s: 10m}"), expect="it is in seconds, e.g. 3600"),
    "layer widths as a list": Mistake(
        cfg("hidden_dim: [16, 16]"), expect="hidden_dim is one width for every layer: `hidden_dim: 16`"
    ),
    "evaluation_duration auto without parallel evaluation": Mistake(
        cfg("evaluation_duration: auto"), expect="Set evaluation_duration to a number (e.g. 10 episodes)"
    ),
    "plot given two experiment directories": Mistake(
        command=("plot", "{dir}", "{dir}"), args=("--out", "x.png"), expect="rllib plot takes one directory"
    ),
    "RLlib's evaluate --env": Mistake(
        command=("evaluate", "{dir}"), args=("--env", "dmc/cartpole-swingup"), expect="it has no --env"
    ),
    "a value option given twice": Mistake(
        args=("--seed", "0", "--seed=1"), expect="--seed is given twice; it takes one value (the last would silently"
    ),
    "evaluate --seed negative": Mistake(
        command=("evaluate", "{dir}"), args=("--seed", "-5"), expect="argument --seed: -5 must be in [0, 2**32)"
    ),
    # ---- YAML robustness
    "non-UTF-8 bytes": Mistake(b"tiny:\n  run: SMAC\xff\xfe\n", expect="not UTF-8 text"),
    "NUL byte": Mistake(
        BASE.replace("run: SMAC", "run: SMAC\x00"),
        expect="mistake.yaml:3: the file contains the control character U+0000",
    ),
    "billion laughs": Mistake(BILLION_LAUGHS, expect="aliases"),
    "deep nesting (flow)": Mistake("tiny: " + "[" * 5000 + "]" * 5000 + "\n", expect="nested deeper than"),
    "deep nesting (block)": Mistake(
        "tiny:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 200)), expect="nested deeper than"
    ),
    "recursive alias": Mistake(
        cfg("x: &loop [1, *loop]"), expect="an alias refers to the mapping or list that contains it"
    ),
    "deep through aliases": Mistake(
        "".join(f"a{i}: &a{i} " + "[" * 30 + (f"*a{i - 1}" if i else "1") + "]" * 30 + "\n" for i in range(5)),
        expect="nested deeper than 64 levels through '*' aliases",
    ),
    "list as a mapping key": Mistake("? [a, b]\n: 1\n", expect="mapping key"),
    "mapping as a config key": Mistake(cfg("{a: 1}: 2"), expect="mapping key"),
    "null config key": Mistake(cfg("~: 2"), expect="config key None"),
    "number config key": Mistake(cfg("5: 2"), expect="config key 5"),
    "number stop key": Mistake(exp("stop: {5: 2}"), expect="stop criterion 5"),
    "file too big": Mistake(lambda: BASE + "#" * (2 * 2**20) + "\n", expect="larger than"),
    "python tag": Mistake(
        cfg("gamma: !!python/object/apply:os.system [true]"), expect="tags like !!python/... are not allowed"
    ),
    "two documents": Mistake(BASE + "---\n" + BASE, expect="one YAML document"),
    "top-level list": Mistake("- run: SMAC\n", expect="expected a mapping"),
    # --- trials as they run (cli/trial_check.py)
    "grid over a misspelled replay key": Mistake(
        cfg("replay_buffer_config: {capacty: {grid_search: [1000, 2000]}}"),
        expect="trial replay_buffer_config.capacty=1000: replay_buffer_config.capacty=1000 is never read by SMAC; "
        "did you mean 'capacity'?",
    ),
    "grid over a replay key SMAC never reads": Mistake(
        cfg("replay_buffer_config: {alpha: {grid_search: [0.5, 0.7]}}"),
        expect="replay_buffer_config.alpha=0.5 is never read by SMAC",
    ),
    "unknown activation in RLlib's SAC": Mistake(
        SAC_PENDULUM + "    model_config: {fcnet_activation: relux}\n",
        expect="model_config.fcnet_activation: SAC's module: Unknown activation (relux) for framework=torch!; fix "
        "model_config.fcnet_activation",
    ),
    "model_config typo in RLlib's SAC": Mistake(
        SAC_PENDULUM + "    model_config: {fcnet_hidens: [8]}\n", expect="did you mean 'fcnet_hiddens'?"
    ),
    "RLlib's network widths swept for SMAC": Mistake(
        cfg("model_config: {fcnet_hiddens: {grid_search: [[64, 64], [256, 256]]}}"),
        expect="trial model_config.fcnet_hiddens=[64, 64]: model_config.fcnet_hiddens: SMAC makes its module's "
        "model_config from its own settings and reads none from the file; size its networks with hidden_dim in config",
    ),
    "a SMAC setting given as model_config": Mistake(
        cfg("model_config: {num_particles: 16}"),
        expect="model_config.num_particles: SMAC makes its module's model_config from its own settings and reads none "
        "from the file; set num_particles in config (the module's model_config is made from it",
    ),
    "replay capacity a word": Mistake(
        cfg('replay_buffer_config: {capacity: "many"}'),
        expect="replay_buffer_config.capacity='many' has the wrong type: expected an integer",
    ),
    "evaluation env_config value a word": Mistake(
        cfg('evaluation_config: {explore: false, env_config: {time_limit: "x"}}'),
        expect="evaluation_config: env_config.time_limit='x' has the wrong type",
    ),
    "evaluation env that does not exist": Mistake(
        cfg("evaluation_config: {explore: false, env: dmc/cartpole-nope}"),
        expect="evaluation_config: unknown env 'dmc/cartpole-nope'",
    ),
    "evaluation camera on states": Mistake(
        cfg("evaluation_config: {explore: false, env_config: {camera_id: 9}}"),
        expect="evaluation_config: env_config.camera_id applies to pixel observations only",
    ),
    "pixels given to a state-only algorithm": Mistake(
        PIXELS_TO_TD3, expect="TD3's module cannot be built for 'dmc/cartpole-balance' (observations Box(0, 255, (64"
    ),
    "grid of whole mappings with a misspelled key": Mistake(
        cfg("evaluation_config: {grid_search: [{explore: false}, {explre: true}]}"),
        expect="trial evaluation_config.explre=True: unknown evaluation_config key 'explre'",
    ),
    "grid of whole env_configs with a bad value": Mistake(
        cfg("env_config: {grid_search: [{time_limit: 1.0}, {time_limit: 1.0, image_size: 64}]}"),
        expect="trial env_config.image_size=64: ",
    ),
    "a grid of model_configs with a number where a list goes": Mistake(
        SAC_PENDULUM + "    model_config: {grid_search: [{fcnet_hiddens: [16, 16]}, {fcnet_hiddens: 16}]}\n",
        expect="trial model_config.fcnet_hiddens=16: model_config.fcnet_hiddens=16 has the wrong type: expected a "
        "list, got int (write e.g. `fcnet_hiddens: [16]`)",
    ),
    "model_config a number": Mistake(
        cfg("model_config: 5"), expect="mistake.yaml:8: model_config=5 has the wrong type: expected a mapping"
    ),
    "run swept over algorithms": Mistake(
        exp("run: {grid_search: [SMAC, SACBaseline]}"),
        expect="run cannot be swept (each algorithm has its own config class): write one experiment per algorithm in "
        "the same file, e.g. a `.defaults` template merged into `smac:` and `sacbaseline:` with `<<: *defaults`",
    ),
    "run a list of algorithms": Mistake(exp("run: [SMAC, TD3]"), expect="run cannot be swept"),
    "DQN on continuous actions": Mistake(
        "bad:\n  run: DQN\n  env: dmc/cartpole-balance\n  stop: {training_iteration: 1}\n  config:\n"
        "    env_config: {time_limit: 1.0}\n    num_env_runners: 0\n",
        expect="DQN takes discrete actions only (its module has one output per action, action_space.n); "
        "dmc/cartpole-balance has continuous actions Box(-1.0, 1.0, (1,), float32); use SAC/SMAC (continuous) or a "
        "discrete env",
    ),
    "evaluation on a task of another domain": Mistake(
        cfg("evaluation_config: {explore: false, env: dmc/cheetah-run}"),
        expect="evaluation_config: the evaluation env 'dmc/cheetah-run' (observations Box(-inf, inf, (17,), float32), "
        "actions Box(-1.0, 1.0, (6,), float32)) has other spaces than the training env 'dmc/cartpole-balance' "
        "(observations Box(-inf, inf, (5,), float32), actions Box(-1.0, 1.0, (1,), float32)): the evaluation runs "
        "the trained module; evaluate on an env with the same spaces",
    ),
    **(
        {}
        if importlib.util.find_spec("Box2D")
        else {
            "gymnasium env whose extra is not installed": Mistake(
                exp("env: LunarLanderContinuous-v3").replace("    env_config: {time_limit: 1.0}\n", ""),
                expect="env 'LunarLanderContinuous-v3' cannot be made here: Box2D is not installed, you can install "
                'it by run `pip install swig` followed by `pip install "gymnasium[box2d]"`',
            ),
            "evaluation env whose extra is not installed": Mistake(
                exp("env: Pendulum-v1")
                .replace(
                    "    evaluation_config: {explore: false}\n",
                    "    evaluation_config: {explore: false, env: LunarLanderContinuous-v3, env_config: {}}\n",
                )
                .replace("    env_config: {time_limit: 1.0}\n", ""),
                expect="evaluation_config: the evaluation env 'LunarLanderContinuous-v3' cannot be made here: Box2D is "
                "not installed",
            ),
        }
    ),
    # --- measured against the stop: BASE stops at 2 iterations x 100 env steps, warm-up 100, one 100-step
    # episode (time_limit 1.0 s of cartpole), evaluation_interval 2 (smac_rllib/cli/horizon.py)
    "num_samples with a fixed seed": Mistake(
        exp("num_samples: 3"), expect="num_samples: 3 with seed: 0 runs 3 identical trials"
    ),
    "num_samples with a seed grid": Mistake(
        _set_line(cfg("seed: {grid_search: [0, 1]}"), "  ", "num_samples: 2", "  run: SMAC\n"),
        expect="num_samples: 2 repeats each seed of seed: {grid_search: [0, 1]}",
    ),
    "--num-samples with --seed": Mistake(
        args=("--num-samples", "2", "--seed", "1"), expect="num_samples: 2 with seed: 1 runs 2 identical trials"
    ),
    "training return above the task's bound": Mistake(
        exp("stop: {training_iteration: 2, env_runners/episode_return_mean: 150}"),
        expect="env_runners/episode_return_mean=150 is never reached: an episode of dmc/cartpole-balance returns at "
        "most 100",
    ),
    "evaluation return above the task's bound": Mistake(
        exp("stop: {evaluation/env_runners/episode_return_mean: 100.5}"),
        expect="evaluation/env_runners/episode_return_mean=100.5 is never reached",
    ),
    "warm-up longer than the stop": Mistake(
        cfg("num_steps_sampled_before_learning_starts: 1000"),
        expect="the stop (training_iteration: 2) ends at iteration 2 x 100 = 200 env steps, never past "
        "num_steps_sampled_before_learning_starts=1,000: no gradient update would run; lower "
        "num_steps_sampled_before_learning_starts to <= 199 or raise the stop to 11 iterations (1,100 env steps)",
    ),
    "warm-up as long as the stop": Mistake(
        cfg("num_steps_sampled_before_learning_starts: 200"),
        expect="never past num_steps_sampled_before_learning_starts=200",
    ),
    "env-step stop within the warm-up": Mistake(
        exp("stop: {env_runners/num_env_steps_sampled_lifetime: 100}"),
        expect="the stop (env_runners/num_env_steps_sampled_lifetime: 100) ends at iteration 1 x 100 = 100 env "
        "steps, never past num_steps_sampled_before_learning_starts=100",
    ),
    "warm_up_only with updates": Mistake(
        exp("warm_up_only: true"), expect="warm_up_only: true, but the stop (training_iteration: 2)"
    ),
    "warm_up_only a string": Mistake(exp('warm_up_only: "yes"'), expect="warm_up_only='yes' must be true or false"),
    "evaluation_interval past the stop": Mistake(
        cfg("evaluation_interval: 3"),
        expect="evaluation_interval: 3 is never reached: the stop (training_iteration: 2) ends at iteration 2",
    ),
    "evaluation timesteps shorter than an episode": Mistake(
        cfg("evaluation_duration: 50", "evaluation_duration_unit: timesteps"),
        expect="evaluation_duration: 50 timesteps over 1 eval env(s) never completes one 100-step episode",
    ),
    "evaluation longer than the training": Mistake(
        cfg("evaluation_duration: 21"),
        expect="evaluation_duration: 21 episodes = 2,100 env steps every 2 iteration(s) is more than 10x the 200 "
        "env steps trained in between",
    ),
    "ASHA's default max_t before the stop": Mistake(
        exp("scheduler: {type: ASHA}", "stop: {training_iteration: 200}"),
        expect="scheduler max_t=100 (training_iteration, ASHA's default) is before the stop at 200 iterations",
    ),
    "ASHA max_t before the stop": Mistake(
        exp("scheduler: {type: ASHA, max_t: 1}"),
        expect="scheduler max_t=1 (training_iteration) is before the stop at 2 iterations",
    ),
    "ASHA max_t in env steps before the stop": Mistake(
        exp("scheduler: {type: ASHA, time_attr: env_runners/num_env_steps_sampled_lifetime}"),
        expect="max_t=100 (env_runners/num_env_steps_sampled_lifetime, ASHA's default) is before the stop at 200 "
        "env steps",
    ),
    "ASHA grace_period at the stop": Mistake(
        exp("scheduler: {type: ASHA, grace_period: 2}"),
        expect="scheduler grace_period=2 (training_iteration) is not before the stop at 2 iterations",
    ),
    "checkpoint_frequency past the stop": Mistake(
        exp("checkpoint_config: {checkpoint_frequency: 5, checkpoint_at_end: false}"),
        expect="checkpoint_frequency=5 with checkpoint_at_end: false saves no checkpoint",
    ),
    "checkpoints ranked before the first evaluation": Mistake(
        _set_line(
            _set_line(cfg("evaluation_interval: 3"), "  ", "stop: {training_iteration: 3}", "  run: SMAC\n"),
            "  ",
            "checkpoint_config: {checkpoint_frequency: 2, checkpoint_at_end: false, "
            "checkpoint_score_attribute: evaluation/env_runners/episode_return_mean}",
            "  run: SMAC\n",
        ),
        expect="every checkpoint (every 2 iteration(s) up to iteration 2) comes before the first evaluation at "
        "iteration 3",
    ),
    "ASHA on seconds with a stop in iterations": Mistake(
        exp("scheduler: {type: ASHA, time_attr: time_total_s}", "stop: {training_iteration: 500}"),
        expect="scheduler time_attr: time_total_s, and ASHA's default max_t=100 is in time_total_s units: every trial "
        "ends at 100 seconds, whatever the stop (training_iteration: 500) allows; set an explicit max_t in "
        "time_total_s units or time_attr: training_iteration (the stop's units)",
    ),
    "checkpoints that keep the lowest return": Mistake(
        exp(
            "checkpoint_config: {checkpoint_score_attribute: evaluation/env_runners/episode_return_mean, "
            "checkpoint_score_order: min, num_to_keep: 1, checkpoint_frequency: 1}"
        ),
        expect="checkpoint_config ranks evaluation/env_runners/episode_return_mean with checkpoint_score_order: min: "
        "num_to_keep: 1 keeps the lowest-return (worst-policy) checkpoints; write checkpoint_score_order: max",
    ),
    "checkpoints that keep the highest loss": Mistake(
        exp("checkpoint_config: {checkpoint_score_attribute: learners/default_policy/critic_loss}"),
        expect="ranks learners/default_policy/critic_loss with checkpoint_score_order unset (the default: max): "
        "num_to_keep: 2 keeps the highest-loss checkpoints; write checkpoint_score_order: min",
    ),
    "ASHA that keeps the lowest return": Mistake(
        exp("scheduler: {type: ASHA, mode: min}"),
        expect="scheduler ranks evaluation/env_runners/episode_return_mean with mode: min: ASHA would stop all but "
        "the lowest-return (worst-policy) trials; write mode: max",
    ),
    "episode length stop above the task's episode": Mistake(
        exp("stop: {training_iteration: 50, env_runners/episode_len_mean: 2000}"),
        expect="stop criterion env_runners/episode_len_mean=2000 is never reached: an episode of "
        "dmc/cartpole-balance lasts at most 100 agent steps (its time limit); lower it to <= 100",
    ),
    "a seed listed twice in a grid": Mistake(
        cfg("seed: {grid_search: [0, 0, 1]}"),
        expect="grid_search of seed lists 0 twice: 2 identical trials; list each value once",
    ),
    "a grid listing one mapping twice in other words": Mistake(
        cfg(
            "replay_buffer_config: {grid_search: [{type: EpisodeReplayBuffer, capacity: 1000}, "
            "{capacity: 1000.0, type: EpisodeReplayBuffer}, {type: EpisodeReplayBuffer, capacity: 1000}]}"
        ),
        expect="grid_search of replay_buffer_config lists {type: EpisodeReplayBuffer, capacity: 1000} 3 times: 3 "
        "identical trials",
    ),
    # --- formats as in users' other tools
    "--config duplicate key": Mistake(
        args=("--config", '{"gamma": 0.9, "gamma": 0.99}'), expect="--config: duplicate key 'gamma' in one JSON object"
    ),
    "--stop duplicate key": Mistake(
        args=("--stop", '{"training_iteration": 2, "training_iteration": 3}'),
        expect="--stop: duplicate key 'training_iteration'",
    ),
    "two merge keys in one mapping": Mistake(
        "a: &a {x: 1}\nb: &b {y: 1}\n" + BASE.replace("  run: SMAC\n", "  run: SMAC\n  <<: *a\n  <<: *b\n"),
        expect="mistake.yaml:7:3: YAML syntax error: duplicate key '<<' (first on line 6)",
    ),
    "merge key of a plain value": Mistake(cfg("<<: 5"), expect="`<<:` merges a mapping"),
    "a leading zero (YAML 1.1 octal)": Mistake(
        cfg("hidden_dim: 0256"), expect="0256 is octal in YAML 1.1 (read as 174); write 256 without the zero"
    ),
    "a time-like number (YAML 1.1 base 60)": Mistake(
        cfg("evaluation_interval: 1:30"), expect="1:30 is base 60 in YAML 1.1 (read as 90); write 90"
    ),
    "--stop twice with one criterion's two values": Mistake(
        args=("--stop", '{"training_iteration": 2}', "--stop", '{"training_iteration": 5}'),
        expect="--stop gives training_iteration 2 times (2, 5); give each criterion once",
    ),
    "GitLab !reference": Mistake(cfg("gamma: !reference [.defaults, gamma]"), expect="GitLab's !reference tag"),
    "GitLab extends:": Mistake(exp("extends: .defaults"), expect="GitLab's extends: is not YAML"),
    "only templates": Mistake(BASE.replace("tiny:", ".tiny:"), expect="holds only templates (.tiny"),
    "env with dots": Mistake(exp("env: dmc.cartpole.balance"), expect="did you mean 'dmc/cartpole-balance'?"),
    "env with a dot after dmc/": Mistake(exp("env: dmc/cartpole.balance"), expect="did you mean dmc/cartpole-balance?"),
    "--storage-path file: relative": Mistake(
        args=("--storage-path", "file:results"), expect="a file URI is file:///absolute/path"
    ),
    "--storage-path memory://": Mistake(
        args=("--storage-path", "memory://results"), expect="Tune cannot write to memory://"
    ),
    "--storage-path URI without bucket": Mistake(args=("--storage-path", "s3://"), expect="names no bucket"),
    "a base experiment merged into variants runs too": Mistake(
        BASE.replace("tiny:", "_defaults: &defaults", 1)
        + "k4:\n  <<: *defaults\nk8:\n  <<: *defaults\n  stop: {training_iteration: 3}\n",
        expect="experiments '_defaults' and 'k4' are the same run (same run, env, stop and config); drop one (a "
        "template to merge from is named '.defaults'",
    ),
    "storage path with an unset variable": Mistake(
        exp("storage_path: $SMAC_TEST_UNSET_DIR/runs"),
        expect="the environment variable SMAC_TEST_UNSET_DIR is not set",
    ),
    # --- nothing waits in silence
    "--address with nothing there (--dry-run checks it too)": Mistake(
        args=("--address", "127.0.0.1:1"), expect="no Ray cluster answers at 127.0.0.1:1 (Connection refused"
    ),
    "a type error inside grid mappings is named before what the wrong value would make of the run": Mistake(
        cfg(
            'env_config: {grid_search: [{time_limit: 1.0, from_pixels: "false"}, {time_limit: 2.0, from_pixels: "no"}]}'
        ),
        expect="env_config.from_pixels='false' has the wrong type: expected true or false",
    ),
    "a return threshold every DMC episode meets (copied from a Pendulum file)": Mistake(
        exp("stop: {env_runners/episode_return_mean: -150, training_iteration: 2}"),
        expect="stop criterion env_runners/episode_return_mean=-150 is met by every episode",
    ),
    "a batch larger than every env step the stop lets the run collect": Mistake(
        cfg("train_batch_size_per_learner: 4096"),
        expect="train_batch_size_per_learner=4096 is larger than the warm-up (100 steps, "
        "num_steps_sampled_before_learning_starts): the first updates draw 4096 transitions from a replay of 100",
    ),
    "a return threshold above what Pendulum can return (its reward is a cost, <= 0)": Mistake(
        SAC_PENDULUM.replace("{training_iteration: 1}", "{env_runners/episode_return_mean: 900}"),
        expect="stop criterion env_runners/episode_return_mean=900 is never reached: an episode of Pendulum-v1 "
        "returns at most 0",
    ),
    "a replay buffer smaller than the warm-up": Mistake(
        cfg("replay_buffer_config: {capacity: 60}"),
        expect="replay_buffer_config.capacity=60 holds fewer steps than the warm-up "
        "(num_steps_sampled_before_learning_starts=100): its first 40 steps are dropped",
    ),
    "a config key written beside config": Mistake(
        BASE.replace("  max_failures: 0\n", "  max_failures: 0\n  num_particles: 8\n"),
        expect="unknown experiment key 'num_particles'; num_particles is a config key of SMAC: move it under `config:`",
    ),
    "RLlib's older rllib train -f FILE": Mistake(
        command=("train", "-f", "{yaml}"), expect="`rllib train -f FILE` is RLlib's older form; write: rllib train file"
    ),
    "RLlib's flag form rllib train --algo X --env Y": Mistake(
        command=("train", "--algo", "SAC", "--env", "Pendulum-v1"), expect="this rllib trains from a YAML file only"
    ),
    "a plain list where a sweep was meant": Mistake(
        cfg("num_particles: [4, 8]"), expect="(a sweep over these values is `num_particles: {grid_search: [4, 8]}`)"
    ),
    "a gymnasium module:EnvId whose package is not installed": Mistake(
        exp("env: gymnasium_robotics_not_here:FetchReachDense-v4"),
        expect="from the Python package 'gymnasium_robotics_not_here', which is not installed here; install it",
    ),
    "Tune's resources_per_trial written for an RLlib algorithm": Mistake(
        exp("resources_per_trial: {cpu: 2}"), expect="RLlib makes a trial's resources from its config: set"
    ),
    "a stop on a falling loss (Tune stops at result >= value)": Mistake(
        exp("stop: {learners/default_policy/critic/loss: 0.5, training_iteration: 2}"),
        expect="Tune stops a run when a result is >= its stop value, so a loss stop ends the run while the loss is",
    ),
    "a sweep of a setting another setting switches off (identical trials)": Mistake(
        cfg("estimator: nested", "mlmc_average_level0: {grid_search: [true, false]}"),
        expect="mlmc_average_level0=True is not read with estimator='nested' (only with estimator: mlmc)",
    ),
    "a sweep of an asynchronous-loop setting with the synchronous loop": Mistake(
        cfg("async_learning: false", "weight_sync_every_updates: {grid_search: [10, 100]}"),
        expect="weight_sync_every_updates=10 is not read with async_learning=False (only with async_learning: true)",
    ),
    "a sweep whose values resolve to one setting (null is automatic)": Mistake(
        cfg("initial_alpha: {grid_search: [null, 0.1]}"),
        expect="trials initial_alpha=None and initial_alpha=0.1 run the same settings (initial_alpha=None is 0.1 for "
        "a state run)",
    ),
    "a factorial sweep whose switched-off corner repeats a run": Mistake(
        cfg("estimator: {grid_search: [nested, mlmc]}", "mlmc_average_level0: {grid_search: [true, false]}"),
        expect="mlmc_average_level0=False] run the same settings (mlmc_average_level0=True is not read with "
        "estimator='nested' (only with estimator: mlmc))",
    ),
    "a regularizer's scale without the regularizer": Mistake(
        cfg("beta_scale: none"), expect="beta_scale='none' is not read with beta=0.0 (only with beta > 0)"
    ),
    "a sample request longer than the whole run": Mistake(
        cfg("rollout_fragment_length: 5000").replace(
            "stop: {training_iteration: 2}", "stop: {env_runners/num_env_steps_sampled_lifetime: 1000}"
        ),
        expect="rollout_fragment_length: 5,000 x 1 env(s) per runner = 5,000 env steps per sample request, past the "
        "stop (env_runners/num_env_steps_sampled_lifetime: 1000): the first iteration samples 5x the run",
    ),
    "an hdfs storage path this machine cannot reach": Mistake(
        args=("--storage-path", "hdfs://namenode:8020/runs"), expect="check the namenode and path"
    ),
    "an offline RLlib algorithm without recorded data": Mistake(
        "cql:\n  run: CQL\n  env: Pendulum-v1\n  stop: {training_iteration: 2}\n  config: {num_env_runners: 0}\n",
        expect="run: CQL learns offline, from recorded episodes (config `input_`",
    ),
    "a batch larger than the warm-up": Mistake(
        cfg("train_batch_size_per_learner: 256", "num_steps_sampled_before_learning_starts: 50"),
        expect="train_batch_size_per_learner=256 is larger than the warm-up (50 steps, "
        "num_steps_sampled_before_learning_starts): the first updates draw 256 transitions from a replay of 50",
    ),
    "a pixel sequence longer than the warm-up": Mistake(
        lambda: PIXELS_QUICK.read_text().replace(
            "num_steps_sampled_before_learning_starts: 1000", "num_steps_sampled_before_learning_starts: 20"
        ),
        expect="batch_length_T=32 is longer than the warm-up (20 steps, num_steps_sampled_before_learning_starts): "
        "when updates start the replay holds no whole sequence of 32 steps",
    ),
    "hard target updates rarer than the run": Mistake(
        cfg("target_network_update_freq: 8000"),
        expect="target_network_update_freq=8,000 env steps: the stop (training_iteration: 2) ends at iteration 2",
    ),
    "ASHA over a grid of seeds only": Mistake(
        exp("scheduler: {type: ASHA, mode: max}").replace("    seed: 0\n", "    seed: {grid_search: [0, 1]}\n"),
        expect="scheduler ASHA over trials that differ only in their seeds (seed: {grid_search: ...}): ASHA would stop",
    ),
    "checkpoints ranked by evaluation at iterations that do not evaluate": Mistake(
        exp(
            "checkpoint_config: {checkpoint_frequency: 3, checkpoint_score_attribute: "
            "evaluation/env_runners/episode_return_mean}",
            "stop: {training_iteration: 4}",
        ),
        expect="every 3 iteration(s), but evaluation runs every 2: the checkpoints of iteration(s) 3 carry an earlier",
    ),
    "minimum seconds per iteration written for minimum env steps": Mistake(
        cfg("min_time_s_per_iteration: 1000"),
        expect="min_time_s_per_iteration=1000 makes every iteration last at least 1000 seconds, whatever it samples",
    ),
    "a return stop at exactly the task's maximum": Mistake(
        exp("stop: {evaluation/env_runners/episode_return_mean: 100}"),
        expect="=100 is the most an episode of dmc/cartpole-balance can return",
    ),
    "gymnasium's human render mode in training": Mistake(
        cfg("env_config: {render_mode: human}").replace("env: dmc/cartpole-balance", "env: Pendulum-v1"),
        expect="env_config.render_mode='human' opens a window in every env",
    ),
    "DreamerV3's float frames for SMAC": Mistake(
        envc("from_pixels: true, pixel_format: float"),
        expect="env_config.pixel_format='float' is for RLlib's DreamerV3: SMAC takes uint8 frames",
    ),
    "a TensorFlow framework for a torch-only algorithm": Mistake(
        cfg("framework: tf2"), expect="framework='tf2': this package's algorithms (and RLlib's new API stack here) run"
    ),
    "an episode-length stop on a task whose episodes never end early": Mistake(
        exp("stop: {env_runners/episode_len_mean: 80, training_iteration: 20}"),
        expect="episode_len_mean=80 is met by every episode: dmc/cartpole-balance's episodes never end early, each "
        "lasts 100 agent steps",
    ),
    "updates per iteration written as updates per env step": Mistake(
        cfg("updates_per_env_step: 1000"),
        expect="updates_per_env_step=1000 must be in [0.01, 64] (per env step, not per",
    ),
    "an env seed beside the run's seed (RLlib's reset seed replaces it)": Mistake(
        envc("seed: 7"), expect="env_config.seed=7 is never read: with seed set (seed: 0), RLlib seeds every env"
    ),
    "a sweep over a pixel run's action repeat that lists its default": Mistake(
        lambda: PIXELS_QUICK.read_text().replace(
            "    env_config:\n      from_pixels: true\n      image_size: 64\n      action_repeat: 2\n"
            "      fast_render: true\n",
            "    env_config:\n      grid_search: [{from_pixels: true}, {from_pixels: true, action_repeat: 2}]\n",
        ),
        expect="trials (without env_config.action_repeat) and env_config.action_repeat=2 run the same settings",
    ),
    "a quoted number for a gymnasium env's argument": Mistake(
        cfg("env_config: {g: '3.71'}").replace("env: dmc/cartpole-balance", "env: Pendulum-v1"),
        expect="env_config.g='3.71' is a string, but Pendulum-v1's g is a number (default 10.0)",
    ),
    "a DMC task without a time limit": Mistake(
        cfg("env_config: {}").replace("env: dmc/cartpole-balance", "env: dmc/lqr-lqr_2_1"),
        expect="dmc/lqr-lqr_2_1 has no time limit (an episode ends only when the task reaches its goal state)",
    ),
    "RLlib's torch.compile switch for our learner": Mistake(
        cfg("torch_compile_learner: true"),
        expect="torch_compile_learner=True is RLlib's torch.compile switch for its own modules, never read by SMAC's",
    ),
    "every checkpoint kept, each holding the replay, past the free disk": Mistake(
        exp(
            "checkpoint_config: {checkpoint_frequency: 1, num_to_keep: null}",
            "stop: {env_runners/num_env_steps_sampled_lifetime: 100000000}",
        ),
        expect="checkpoint_config keeps all 1,000,000 checkpoints of up to ~0.04 GiB (each holds the replay buffer)",
    ),
    "a YAML alias used above its anchor": Mistake(
        "a:\n  run: SMAC\n  env: dmc/cartpole-balance\n  stop: {training_iteration: 2}\n  config: {<<: *base}\n"
        "b:\n  run: SMAC\n  env: dmc/cartpole-balance\n  stop: {training_iteration: 2}\n  config: &base {seed: 0}\n",
        expect="alias *base is used before its anchor &base (line 10): YAML reads top to bottom",
    ),
    "stop written inside config": Mistake(
        cfg("stop: {training_iteration: 2}"),
        expect="stop is an experiment key, not a config key: move `stop:` out of config, beside it",
    ),
    "a target entropy above what a squashed policy can have": Mistake(
        cfg("target_entropy: 1.0"),
        expect="target_entropy: 1.0 is never reached: dmc/cartpole-balance's 1 action dimension(s) squashed to [-1, 1]",
    ),
    "deterministic actions for training, meant for the evaluation": Mistake(
        cfg("explore: false"),
        expect="explore: false in config makes the env runners that collect the training data act deterministically",
    ),
    "the stop given inside --config": Mistake(
        args=("--config", '{"stop": {"training_iteration": 3}}'),
        expect="stop is an experiment key, and --config sets config keys only; pass it as --stop instead",
    ),
    "ASHA's rung at an iteration that does not evaluate": Mistake(
        exp(
            "scheduler: {type: ASHA, metric: evaluation/env_runners/episode_return_mean, mode: max, max_t: 6, "
            "grace_period: 3, reduction_factor: 2}",
            "stop: {training_iteration: 6}",
        ).replace("num_particles: 4", "num_particles: {grid_search: [2, 4]}"),
        expect="scheduler ASHA compares trials on evaluation/env_runners/episode_return_mean at iteration(s) 3, but "
        "evaluation runs every 2",
    ),
    "gamma 1 on a task that only ends at its time limit": Mistake(
        cfg("gamma: 1.0"), expect="gamma=1 on dmc/cartpole-balance: a DMC episode ends only at its time limit"
    ),
    "a DQN-style target update period beside a soft tau": Mistake(
        exp("stop: {training_iteration: 20}").replace(
            "    seed: 0\n", "    seed: 0\n    target_network_update_freq: 100\n"
        ),
        expect="target_network_update_freq=100 env steps with tau=0.005: the run's 19 target updates each move",
    ),
    "a stop on one iteration's env steps": Mistake(
        exp("stop: {env_runners/num_env_steps_sampled: 5000}"),
        expect="stop criterion env_runners/num_env_steps_sampled: 5000 is a count of one iteration (each result",
    ),
    "a stop on one iteration's seconds": Mistake(
        exp("stop: {time_this_iter_s: 120}"), expect="write time_total_s: 120"
    ),
    "more torch threads per process than the machine has cores": Mistake(
        cfg("torch_num_threads: 4096"), expect="torch_num_threads=4096, and this machine has"
    ),
    "STRICT_SPREAD on a local Ray": Mistake(
        cfg("placement_strategy: STRICT_SPREAD", "num_env_runners: 2"),
        expect="placement_strategy STRICT_SPREAD puts each of a trial's 3 bundles",
    ),
    "a sweep of the iteration size, thought to be more data per update": Mistake(
        exp("stop: {env_runners/num_env_steps_sampled_lifetime: 400}").replace(
            "min_sample_timesteps_per_iteration: 100", "min_sample_timesteps_per_iteration: {grid_search: [100, 200]}"
        ),
        expect="the trials differ only in min_sample_timesteps_per_iteration, which change how a run is evaluated or "
        "reported, not what it learns: the sweep trains the same run 2 times; train one trial",
    ),
    "a seed grid one level too deep, inside evaluation_config": Mistake(
        cfg("evaluation_config: {explore: false, seed: {grid_search: [0, 1, 2]}}"),
        expect="seed is swept inside evaluation_config: the 3 trials train with the same seed (0)",
    ),
    "a training-return stop that the random warm-up already meets": Mistake(
        exp("stop: {env_runners/episode_return_mean: 1, training_iteration: 2}"),
        expect="stop criterion env_runners/episode_return_mean=1 is met by uniform random actions",
    ),
    "a training-return stop that random actions meet at the first episode": Mistake(
        exp("stop: {env_runners/episode_return_mean: 1, training_iteration: 2}").replace(
            "num_steps_sampled_before_learning_starts: 100", "num_steps_sampled_before_learning_starts: 50"
        ),
        expect="so the run would stop at its first episode (100 env steps, 50 of them uniform random warm-up)",
    ),
    "an episode-count stop that ends inside the warm-up": Mistake(
        exp("stop: {env_runners/num_episodes_lifetime: 1}"),
        expect="the stop (env_runners/num_episodes_lifetime: 1) ends at iteration 1 x 100 = 100 env steps, never past "
        "num_steps_sampled_before_learning_starts=100",
    ),
    "a gymnasium env kwarg that fails only at the first step (one value for a range)": Mistake(
        SAC_PENDULUM.replace("Pendulum-v1", "Hopper-v5") + "    env_config: {healthy_z_range: [0.7]}\n",
        expect="env 'Hopper-v5' with env_config {'healthy_z_range': [0.7]} fails at its first step: not enough values",
    ),
    "a module size in evaluation_config (the evaluation runs the trained weights)": Mistake(
        cfg("evaluation_config: {explore: false, hidden_dim: 32}"),
        expect="evaluation_config: hidden_dim=32 (training: 16) builds the evaluation's module with other weight "
        "shapes",
    ),
    "SpinningUp's polyak coefficient written as RLlib's tau": Mistake(
        cfg("tau: 0.995"), expect="tau=0.995 moves the target networks 99.5% of the way to the online ones"
    ),
    "a smoothing window longer than the run under a training-return stop": Mistake(
        _set_line(
            exp("stop: {env_runners/episode_return_mean: 99, env_runners/num_env_steps_sampled_lifetime: 400}"),
            "    ",
            "metrics_num_episodes_for_smoothing: 1000",
            "  config:\n",
        ),
        expect="metrics_num_episodes_for_smoothing=1000 is more than the 4 episodes this run collects",
    ),
    "a learning rate whose exponent lost its sign": Mistake(
        cfg("critic_lr: 3e4"), expect="critic_lr=30000.0: Adam moves each weight by up to ~30000.0 per update"
    ),
    "a return stop above what a gymnasium task's episode can return (InvertedPendulum: 1 per step)": Mistake(
        SAC_PENDULUM.replace("Pendulum-v1", "InvertedPendulum-v5").replace(
            "stop: {training_iteration: 1}", "stop: {env_runners/episode_return_mean: 1500}"
        ),
        expect="an episode of InvertedPendulum-v5 returns at most 1000 (1000 steps x a reward in [0, 1])",
    ),
    "max_episode_steps: null meant as 'no time limit' on a gymnasium env": Mistake(
        SAC_PENDULUM + "    env_config: {max_episode_steps: null}\n",
        expect="env_config.max_episode_steps=null does not lift Pendulum-v1's time limit: gymnasium reads None as the "
        "registered limit (200 steps)",
    ),
    "the paper's Latent-SAC as a run name": Mistake(
        exp("run: LatentSAC"), expect="unknown run 'LatentSAC'; Latent-SAC is run: SMAC with num_particles: 0"
    ),
    "--config JSON whose quotes the shell dropped": Mistake(
        args=("--config", "{num_particles:", "8}"),
        expect="--config {num_particles: 8}: the shell dropped the JSON's quotes or split it at its spaces",
    ),
    "several seeds after --seed": Mistake(
        args=("--seed", "0", "1", "2"), expect="--seed takes one seed (given: 0 1 2); for several, sweep it"
    ),
    "RLlib's older --ray-num-cpus": Mistake(
        args=("--ray-num-cpus", "2"), expect="rllib train file has no --ray-num-cpus: the local Ray gets the CPUs"
    ),
    "rllib evaluate --deterministic (it is already)": Mistake(
        command=("evaluate", "{dir}"),
        args=("--deterministic",),
        expect="rllib evaluate has no --deterministic: rllib evaluate runs the deterministic policy already",
    ),
    "SB3's --n-eval-episodes to rllib evaluate": Mistake(
        command=("evaluate", "{dir}"),
        args=("--n-eval-episodes", "5"),
        expect="rllib evaluate has no --n-eval-episodes; did you mean --episodes?",
    ),
    "a plot option no plotting tool names alike": Mistake(
        command=("plot", "{dir}"), args=("--smooth", "3"), expect="rllib plot has no --smooth; its options: --help,"
    ),
    "--device cuda": Mistake(
        args=("--device", "cuda"),
        expect="rllib train file has no --device: the learner's device follows the config: --config "
        "'{\"num_gpus_per_learner\": 1}'",
    ),
    "--config written as a Python dict": Mistake(
        args=("--config", '{"async_learning": False}'),
        expect="--config is written as Python, not JSON: write --config '{\"async_learning\": false}'",
    ),
    "an empty grid in --config": Mistake(
        args=("--config", '{"num_particles": {"grid_search": []}}'),
        expect="grid_search of num_particles needs a non-empty list",
    ),
    "Tune's trial_dirname_creator as a string": Mistake(
        exp("trial_dirname_creator: 'lambda t: t.trial_id'"),
        expect="unknown experiment key 'trial_dirname_creator'; Tune takes a Python function there, which a YAML file "
        "cannot hold",
    ),
    "rllib tune (Tune is underneath)": Mistake(
        command=("tune", "file", "{yaml}"),
        expect="rllib has no tune command: rllib train file ",
    ),
    "a grid_search in checkpoint_config": Mistake(
        exp("checkpoint_config: {num_to_keep: {grid_search: [1, 3]}}"),
        expect="checkpoint_config: grid_search sweeps config keys (and env) only; checkpoint_config is one per",
    ),
    "--config into an experiment that lacks the key": Mistake(
        BASE + SAC_BESIDE,
        args=("--config", '{"num_particles": 8}'),
        expect="--config goes into every experiment of the file ('sac' too): set it in the file",
    ),
    "clip_rewards on the new stack": Mistake(
        cfg("clip_rewards: true"), expect="clip_rewards=True is read by RLlib's old API stack only"
    ),
    "a gymnasium entry point as the env": Mistake(
        exp("env: gymnasium.envs.classic_control.pendulum:PendulumEnv").replace("{time_limit: 1.0}", "{}"),
        expect="is the entry point gymnasium registers Pendulum-v1 with, not an env id; write env: Pendulum-v1",
    ),
    "a positive return stop on Reacher": Mistake(
        exp("env: Reacher-v5", "stop: {env_runners/episode_return_mean: 5, training_iteration: 2}").replace(
            "{time_limit: 1.0}", "{}"
        ),
        expect="stop criterion env_runners/episode_return_mean=5 is never reached: an episode of Reacher-v5 returns at "
        "most 0",
    ),
    "rlkit's reward_scale": Mistake(cfg("reward_scale: 5"), expect="'reward_scale' for SMAC; rewards are learned as"),
    "pytorch_sac's init_temperature": Mistake(
        cfg("init_temperature: 0.1"), expect="'init_temperature' for SMAC; write initial_alpha"
    ),
    "DrQ's eval_frequency": Mistake(cfg("eval_frequency: 10"), expect="'eval_frequency' for SMAC; write evaluation_i"),
    "action_repeat one level up": Mistake(
        cfg("action_repeat: 2"), expect="'action_repeat' for SMAC; it is an env_config key: write env_config: {action"
    ),
    "a key's words in another order": Mistake(cfg("lr_actor: 0.001"), expect="'lr_actor' for SMAC; did you mean 'ac"),
    "rllib evaluate on a shell pattern": Mistake(
        command=("evaluate", "{dir}/a", "{dir}/b"),
        expect="rllib evaluate takes one checkpoint (given 2:",
    ),
    "a training-return ranking in a run that ends no episode": Mistake(
        exp("checkpoint_config: {checkpoint_score_attribute: env_runners/episode_return_mean}").replace(
            "{time_limit: 1.0}", "{time_limit: 10.0}"
        ),
        expect="checkpoint_score_attribute env_runners/episode_return_mean is reported once a training episode ends, "
        "and the run's ~200 env steps end none of dmc/cartpole-balance's 1,000-step episodes",
    ),
    "a learning-rate sweep of a warm-up-only run": Mistake(
        exp("warm_up_only: true", "stop: {training_iteration: 1}") + "    actor_lr: {grid_search: [0.001, 0.0003]}\n",
        expect="warm_up_only: true runs no gradient update, so the actor_lr sweep changes nothing",
    ),
    "RLlib's older num_rollout_workers": Mistake(
        cfg("num_rollout_workers: 2"), expect="'num_rollout_workers' for SMAC; RLlib removed it: write num_env_runners"
    ),
    "old-stack SAC's compress_observations": Mistake(
        cfg("compress_observations: true"), expect="compress_observations=True is read by RLlib's old-stack SAC replay"
    ),
    "settings put in learner_config_dict": Mistake(
        cfg("learner_config_dict: {actor_lr: 0.001}"),
        expect="learner_config_dict={'actor_lr': 0.001} is read by custom RLlib learners only",
    ),
    "a sample timeout of 10 ms": Mistake(cfg("sample_timeout_s: 0.01"), expect="sample_timeout_s=0.01 must be >= 1"),
    "the warm-up inside evaluation_config": Mistake(
        cfg("evaluation_config: {explore: false, num_steps_sampled_before_learning_starts: 0}"),
        expect="evaluation_config.num_steps_sampled_before_learning_starts: the evaluation runs the trained policy and "
        "never trains",
    ),
    "TD3 given SAC's temperature": Mistake(
        exp("run: TD3")
        .replace("    num_particles: 4\n    latent_dim: 4\n", "    initial_alpha: 0.2\n")
        .replace("    critic_hidden_dim: 16\n", ""),
        expect="initial_alpha=0.2 is a setting of SAC's entropy temperature, and TD3 has none",
    ),
    "--config @file (curl's form)": Mistake(
        args=("--config", "@override.json"),
        expect="--config takes JSON text, not a file name (override.json): write --config \"$(cat override.json)\"",
    ),
    "a quote never closed": Mistake(
        BASE.replace("env: dmc/cartpole-balance", 'env: "dmc/cartpole-balance'),
        expect='mistake.yaml:4:8: YAML syntax error: the " opened here is never closed; close it at the end of the',
    ),
    "ASHA's time on one iteration's count": Mistake(
        exp("scheduler: {type: ASHA, time_attr: env_runners/num_env_steps_sampled, grace_period: 100, max_t: 1000}"),
        expect="scheduler time_attr env_runners/num_env_steps_sampled is a count of one iteration (each result "
        "restarts it), so ASHA's time never passes its rungs; write time_attr: env_runners/num_env_steps_sampled_",
    ),
    "num_to_keep: -1 for every checkpoint": Mistake(
        exp("checkpoint_config: {num_to_keep: -1}"),
        expect="num_to_keep=-1 must be a positive integer; num_to_keep: null keeps every checkpoint (the default",
    ),
    "PPO's clip_param in a SMAC config": Mistake(
        cfg("clip_param: 0.2"), expect="unknown config key 'clip_param' for SMAC; it is a setting of APPO and PPO, not"
    ),
    "TD3's policy_delay in a SMAC config": Mistake(
        cfg("policy_delay: 2"), expect="'policy_delay' for SMAC; it is a setting of TD3, not of SMAC"
    ),
    "SB3's target_update_interval": Mistake(
        cfg("target_update_interval: 1"), expect="'target_update_interval' for SMAC; write target_network_update_freq"
    ),
    "a checkpoint_config key at the experiment's level": Mistake(
        exp("num_to_keep: 3"), expect="'num_to_keep'; it is a checkpoint_config key: write checkpoint_config: {num_to"
    ),
    "the Tuner's tune_config block": Mistake(
        exp("tune_config: {num_samples: 2}"),
        expect="'tune_config'; the Tuner's tune_config is written flat here: its keys this file reads (num_samples,",
    ),
    "a Tune argument only Python gives": Mistake(
        exp("chdir_to_trial_dir: false"),
        expect="'chdir_to_trial_dir'; it is an argument of tune.TuneConfig in Python, which rllib train file does not",
    ),
    "log_to_file given a path": Mistake(
        exp("log_to_file: /tmp/out.log"), expect="log_to_file='/tmp/out.log': write true (the trial's stdout and stderr"
    ),
    "render_env while training": Mistake(
        cfg("render_env: true"),
        expect="render_env=True renders nothing on RLlib's new API stack (training runs headless); record a trained "
        "policy with rllib evaluate CHECKPOINT --video eval.mp4",
    ),
    "a stop on one evaluation's episode count": Mistake(
        exp("stop: {evaluation/env_runners/num_episodes: 10}"),
        expect="stop criterion evaluation/env_runners/num_episodes: 10 is a count of one evaluation (each result "
        "restarts it), not the run's: the run would stop only if one evaluation reached it; write "
        "evaluation/env_runners/num_episodes_lifetime: 10",
    ),
    "the file read from stdin": Mistake(
        command=("train", "file", "-"), expect="rllib train file reads a file path, not stdin ('-')"
    ),
    "a project name given to --wandb": Mistake(
        args=("--wandb", "smac-project"), expect="--wandb takes no value (given: smac-project); the W&B project is"
    ),
    "--name for the experiment's name": Mistake(
        args=("--name", "cartpole-k4"), expect="rllib train file has no --name: the experiment's name is its top-level"
    ),
    "Python's None in YAML": Mistake(
        cfg("evaluation_interval: None"), expect="(YAML's None is null: `evaluation_interval: null`)"
    ),
    "SB3's 'auto' as the initial temperature": Mistake(
        cfg("initial_alpha: auto"),
        expect="initial_alpha='auto' has the wrong type: expected a number, got the string "
        "'auto' (write e.g. `initial_alpha: 0.1`, its default)",
    ),
    "CleanRL's autotune switch": Mistake(
        cfg("autotune: false"), expect="unknown config key 'autotune' for SMAC; the temperature alpha is always learned"
    ),
    "a nested mapping on one YAML line": Mistake(
        exp("stop: training_iteration: 2"),
        expect="`stop: training_iteration: 2` nests a mapping on one line, which YAML needs in braces: "
        "`stop: {training_iteration: 2}`",
    ),
    "an end checkpoint ranked by an evaluation it never had": Mistake(
        exp(
            "stop: {training_iteration: 3}",
            "checkpoint_config: {checkpoint_at_end: true, num_to_keep: 1, checkpoint_score_attribute: "
            "evaluation/env_runners/episode_return_mean}",
        ),
        expect="saves at the end (iteration 3, the stop), which does not evaluate (evaluation every 2): that "
        "checkpoint carries iteration 2's score",
    ),
    "RLlib's old SAC network configs": Mistake(
        cfg("q_model_config: {fcnet_hiddens: [512, 512]}"),
        expect="q_model_config={'fcnet_hiddens': [512, 512]} is an RLlib old-API-stack setting this algorithm never",
    ),
    "--config env_config null (replace or reset?)": Mistake(
        args=("--config", '{"env_config": null}'),
        expect='--config {"env_config": null} replaces the file\'s env_config with nothing: write {"env_config": {}}',
    ),
    "an evaluation-return stop written as a normalized score": Mistake(
        exp("stop: {evaluation/env_runners/episode_return_mean: 0.9, training_iteration: 4}"),
        expect="stop criterion evaluation/env_runners/episode_return_mean=0.9 is met by an episode of uniform random "
        "actions",
    ),
    "pixel noise in gray levels": Mistake(
        without_state_keys(envc("pixel_noise_std: 12.75, from_pixels: true")),
        expect="pixel_noise_std=12.75 is wider than the whole [0, 1] pixel range",
    ),
    "rllib train --file": Mistake(
        command=("train", "--file", "{yaml}"), expect="`rllib train --file FILE` is RLlib's older form; write: rllib"
    ),
    "checkpoints ranked by a DMC episode length (always the same)": Mistake(
        exp(
            "checkpoint_config: {checkpoint_frequency: 2, num_to_keep: 1, checkpoint_score_attribute: "
            "env_runners/episode_len_mean}"
        ),
        expect="checkpoint_config ranks on env_runners/episode_len_mean, which is the same for every checkpoint",
    ),
    "PPO's epochs and minibatches on an off-policy loop": Mistake(
        cfg("num_epochs: 10"), expect="num_epochs=10 is an on-policy setting (epochs of minibatches over a sampled"
    ),
    "-c for --config": Mistake(
        args=("-c", '{"num_particles": 4}'), expect="rllib train file has no -c: write --config"
    ),
    "the evaluation's env runners written inside evaluation_config": Mistake(
        cfg("evaluation_config: {explore: false, num_env_runners: 2}"),
        expect="evaluation_config.num_env_runners: the evaluation's env runners are evaluation_num_env_runners",
    ),
    "rllib plot --metrics": Mistake(
        command=("plot", "{dir}"), args=("--metrics", "a", "b"), expect="rllib plot has no --metrics: --metric KEY"
    ),
    "a Windows storage path": Mistake(
        args=("--storage-path", "C:\\Users\\me\\ray_results"), expect="is a Windows path; this machine's paths"
    ),
    "a fractional evaluation_interval (more often meant)": Mistake(
        cfg("evaluation_interval: 0.5"),
        expect="evaluation_interval=0.5 has the wrong type: expected an integer, got "
        "float (write e.g. `evaluation_interval: 1`)",
    ),
    "SB3's --total-timesteps": Mistake(
        args=("--total-timesteps", "20000"),
        expect="rllib train file has no --total-timesteps: write --stop '{\"env_runners/num_env_steps_sampled",
    ),
    "an empty --storage-path (an unset shell variable)": Mistake(
        args=("--storage-path", ""), expect="--storage-path is empty (an unset shell variable?)"
    ),
    "remote_worker_envs, which the new stack's env runners never read": Mistake(
        cfg("remote_worker_envs: true"), expect="remote_worker_envs=True is an RLlib old-API-stack setting"
    ),
    "--seed and a seed in --config that disagree": Mistake(
        args=("--seed", "2", "--config", '{"seed": 1}'), expect="--seed 2 and --config seed 1 disagree"
    ),
    "a flag pasted with an en dash": Mistake(
        args=("\u2013-stop", '{"training_iteration": 1}'),
        expect="'\u2013-stop' starts with a typographic dash (U+2013",
    ),
    "one grid tied to two keys by a YAML alias (Tune crosses them)": Mistake(
        cfg("actor_lr: &lr {grid_search: [0.0001, 0.0003]}\n    critic_lr: *lr"),
        expect="critic_lr and actor_lr share one grid_search (a YAML alias): Tune crosses the two into 2 x 2 trials",
    ),
    "fp16 autocast (the reference's GPU precision) on a CPU learner": Mistake(
        lambda: PIXELS_QUICK.read_text().replace("    env_config:\n", "    autocast: fp16\n    env_config:\n", 1),
        expect="autocast: fp16 on a CPU learner (num_gpus_per_learner: 0): half precision is a GPU setting",
    ),
    "RLlib's old-stack SAC optimization block": Mistake(
        cfg("optimization: {actor_learning_rate: 0.001}"),
        expect="optimization={'actor_learning_rate': 0.001} is an RLlib old-API-stack setting this algorithm never "
        "reads; use actor_lr, critic_lr and alpha_lr",
    ),
    "the old-stack block's name as optimization_config": Mistake(
        cfg("optimization_config: {actor_learning_rate: 0.001}"),
        expect="'optimization_config' for SMAC; RLlib's old-stack SAC rates (its optimization block",
    ),
    "one gradient update per 1000 env steps written as a ratio": Mistake(
        cfg("updates_per_env_step: 0.001"),
        expect="updates_per_env_step=0.001 must be in [0.01, 64] (per env step, not per iteration",
    ),
    "a sweep over the log level (the same run twice)": Mistake(
        cfg("log_level: {grid_search: [WARN, DEBUG]}"),
        expect="the trials differ only in log_level, which change how a run is evaluated or reported",
    ),
    "a sweep over an env runner's CPU reservation (the same run twice)": Mistake(
        cfg("num_cpus_per_env_runner: {grid_search: [0.5, 1]}"),
        expect="the trials differ only in num_cpus_per_env_runner: Ray's resource requests reserve a share",
    ),
    "an indentation of no-break spaces (pasted from a web page)": Mistake(
        BASE.replace("    num_particles: 4", "\u00a0" * 4 + "num_particles: 4"),
        expect=":15:1: the line holds a no-break space (U+00A0, pasted from a web page or a document?), which YAML",
    ),
    "RLlib's removed async evaluation switch (a placeholder in its config)": Mistake(
        cfg("enable_async_evaluation: true"),
        expect="'enable_async_evaluation' for SMAC; RLlib removed it: write evaluation_parallel_to_training: true",
    ),
    "a removed RLlib key without a successor": Mistake(
        cfg("simple_optimizer: true"), expect="'simple_optimizer' for SMAC; RLlib removed it (its config keeps the name"
    ),
    "RLlib's older timesteps_per_iteration": Mistake(
        cfg("timesteps_per_iteration: 1000"), expect="RLlib removed it: write min_sample_timesteps_per_iteration"
    ),
    "in_evaluation, which RLlib sets itself": Mistake(
        cfg("in_evaluation: true"), expect="'in_evaluation' for SMAC; RLlib sets it on the evaluation's own copy"
    ),
    "one critic asked of SMAC (twin_q: false, never read)": Mistake(
        cfg("twin_q: false"), expect="twin_q=False is never read: SMAC builds its critics from its own settings"
    ),
    "a TensorFlow setting": Mistake(
        cfg("eager_tracing: false"), expect="eager_tracing=False is a TensorFlow setting, and this algorithm runs on"
    ),
    "recording the samples with RLlib's offline output": Mistake(
        cfg("output: /tmp/episodes"), expect="output='/tmp/episodes' is a setting of RLlib's offline RL"
    ),
    "an old-stack-only metrics setting": Mistake(
        cfg("keep_per_episode_custom_metrics: true"),
        expect="keep_per_episode_custom_metrics=True is read by RLlib's old API stack only",
    ),
    "more particles for the evaluation (K is read by the updates only)": Mistake(
        cfg("evaluation_config: {explore: false, num_particles: 64}"),
        expect="evaluation_config.num_particles: the evaluation runs the trained policy and never trains, so "
        "num_particles there is never read",
    ),
    "the Python builder's .training(...) written as a block": Mistake(
        cfg("training: {num_particles: 16, latent_dim: 16}"),
        expect="'training' for SMAC; training is the config builder's method .training(...) of the Python API: in",
    ),
    "RLlib's aggregator actors on an off-policy loop with its own replay": Mistake(
        cfg("num_aggregator_actors_per_learner: 2"),
        expect="num_aggregator_actors_per_learner=2 starts RLlib's actors that batch env runners' episodes",
    ),
    "gradients clipped by value (the one update clips by global norm)": Mistake(
        cfg("grad_clip_by: value"), expect="grad_clip_by='value' is never read: this learner's one update clips each"
    ),
    "agent-step counting on a single-agent env": Mistake(
        cfg("count_steps_by: agent_steps"), expect="count_steps_by='agent_steps' counts the agents of a multi-agent env"
    ),
    "RLlib's older sample_async": Mistake(
        cfg("sample_async: true"), expect="RLlib removed it: acting and learning overlap with async_learning: true"
    ),
    "RLlib's older create_env_on_local_worker": Mistake(
        cfg("create_env_on_local_worker: true"), expect="RLlib removed it: write create_local_env_runner"
    ),
    "an algorithm setting inside env_config": Mistake(
        envc("num_particles: 8"),
        expect="unknown env_config key 'num_particles'; num_particles is a setting of SMAC, not of the env: move it up",
    ),
    "an unrendered Jinja placeholder": Mistake(
        cfg("seed: {{ seed }}"), expect="{{ seed }} is a template placeholder (Jinja, Helm, Ansible) that was never"
    ),
    "RLlib's older --ray-address": Mistake(
        args=("--ray-address", "auto"), expect="rllib train file has no --ray-address: connect with --address ADDRESS"
    ),
    "one experiment of a file picked by a flag": Mistake(
        args=("--experiment", "tiny"), expect="rllib train file has no --experiment: rllib train file runs every"
    ),
    "run tags at the experiment level": Mistake(
        exp("tags: [baseline]"), expect="unknown experiment key 'tags'; labels for the runs go to W&B: wandb: {tags:"
    ),
    "an option of train file before the file": Mistake(
        command=("train", "--seed", "3", "file", "{yaml}"),
        expect="the options of rllib train file go after the file: rllib train file ",
    ),
    "RLlib's older gym: prefix on a gymnasium id": Mistake(
        exp("env: gym:Pendulum-v1"), expect="env 'gym:Pendulum-v1': gymnasium's Pendulum-v1 is written env: Pendulum-v1"
    ),
    "W&B tags as one string (taken letter by letter)": Mistake(
        exp("wandb: {tags: smac}"), expect="wandb.tags='smac' must be a list of strings: tags: [smac]"
    ),
    "a W&B run name for every trial": Mistake(
        exp("wandb: {name: run1}"), expect="unknown wandb key 'name'; each trial's W&B run is named after the trial"
    ),
    "a discount key of another codebase": Mistake(
        cfg("discount: 0.99"), expect="unknown config key 'discount' for SMAC; write gamma (the discount, paper: 0.99)"
    ),
    "the paper's K as a key": Mistake(cfg("K: 8"), expect="unknown config key 'K' for SMAC; write num_particles"),
    "a warm-up under another codebase's name": Mistake(
        cfg("warmup_steps: 100"), expect="'warmup_steps' for SMAC; write num_steps_sampled_before_learning_starts"
    ),
    "an env name as a stray argument": Mistake(
        args=("dmc/cartpole-swingup",), expect="the env is the file's env: key; to run another: --config '{\"env\""
    ),
    "a rollout fragment meant as an episode's frames": Mistake(
        cfg("rollout_fragment_length: 50000"),
        expect="rollout_fragment_length: 50,000 x 1 env(s) per runner = 50,000 env steps per sample request, 500x",
    ),
    "a gymnasium evaluation env for a dmc task of a similar name": Mistake(
        cfg("evaluation_config: {explore: false, env: Pendulum-v1}"),
        expect="evaluation_config evaluates on Pendulum-v1, a gymnasium env, a policy trained on dmc/cartpole-balance",
    ),
    "a choice of ours written as a boolean": Mistake(
        cfg("td_entropy: false"), expect="td_entropy=False is unknown; use one of null, 'marginal', 'conditional'"
    ),
    "a fractional iteration count in the stop": Mistake(
        exp("stop: {training_iteration: 2.5}"),
        expect="stop criterion training_iteration=2.5 is a count: the run stops at the first result at or above it, 3",
    ),
    "a flow list without commas (one string)": Mistake(
        cfg("seed: {grid_search: [0 1 2]}"), expect="(a YAML list separates its values with commas: [0, 1, 2])"
    ),
    "the old stack's Atari preprocessing asked at its default": Mistake(
        cfg("preprocessor_pref: deepmind"), expect="preprocessor_pref='deepmind' is read by RLlib's old API stack only"
    ),
    "multi-agent policies on a one-agent env": Mistake(
        cfg("policies: [learner_a, learner_b]"),
        expect="policies=['learner_a', 'learner_b'] is a multi-agent setting: the envs here have one agent",
    ),
    "stop: at the top level of the file": Mistake(
        lambda: "stop: {training_iteration: 2}\n" + BASE,
        expect="stop: at the top level is read as an experiment named 'stop'; experiment keys go inside an experiment",
    ),
    "--wandb and --no-wandb together": Mistake(
        args=("--wandb", "--no-wandb"), expect="--wandb and --no-wandb contradict each other: keep one"
    ),
    "a stop on the transitions the updates replayed": Mistake(
        exp("stop: {learners/__all_modules__/num_env_steps_trained_lifetime: 20000}"),
        expect="counts the transitions the updates replayed (batch x updates), not the env steps the run sampled",
    ),
    "an Atari env": Mistake(exp("env: ALE/Pong-v5"), expect="env 'ALE/Pong-v5' is an Atari game (ale-py, not"),
    "an empty --stop (it replaces the file's)": Mistake(
        args=("--stop", "{}"), expect="--stop '{}' has no criterion, and --stop replaces the file's stop"
    ),
    "a gymnasium space written in the file": Mistake(
        cfg("observation_space: Box(-1, 1, (5,))"),
        expect="observation_space='Box(-1, 1, (5,))': it takes a Python gymnasium space, which a YAML file cannot hold",
    ),
    "a custom env runner class named as a string": Mistake(
        cfg("env_runner_cls: my_pkg.runners.MyRunner"),
        expect="env_runner_cls='my_pkg.runners.MyRunner': it takes a Python class, which a YAML file cannot hold",
    ),
    "the task written into env_config": Mistake(
        envc("task: swingup"),
        expect="unknown env_config key 'task'; the task is part of the env's name: env: dmc/cartpole-swingup",
    ),
    "a target entropy written as a formula": Mistake(
        cfg('target_entropy: "-dim(A)"'), expect="target_entropy='-dim(A)': write a number (e.g. -6.0) or auto"
    ),
    "evaluation_config written as a YAML list": Mistake(
        BASE.replace("    evaluation_config: {explore: false}\n", "    evaluation_config:\n      - explore: false\n"),
        expect="evaluation_config must be a mapping of settings, e.g. evaluation_config: {explore: false}, got list",
    ),
    "a misspelled subcommand of train": Mistake(
        command=("train", "fle", "{yaml}"), expect="rllib train runs a file: rllib train file "
    ),
    "a --config-file flag (Hydra's, accelerate's)": Mistake(
        args=("--config-file", "override.yaml"), expect="rllib train file has no --config-file: --config takes a JSON"
    ),
    "a zero-padded number in --config": Mistake(
        args=("--config", '{"seed": 007}'), expect="--config: JSON numbers do not start with 0 (007, zero-padded?)"
    ),
    "an empty --config (an unset shell variable)": Mistake(
        args=("--config", ""), expect="--config is empty (an unset shell variable?)"
    ),
    "the experiments wrapped in an experiments: key": Mistake(
        lambda: "experiments:\n" + "".join(f"  {line}\n" for line in BASE.splitlines()[1:]),
        expect="unknown experiment key 'tiny'; tiny is an experiment nested one level too deep",
    ),
    "an experiment name longer than a directory name can be": Mistake(
        lambda: BASE.replace("tiny:", "x" * 300 + ":"),
        expect="is 300 bytes and names a directory, which is at most 255",
    ),
    "the Tuner's param_space block for config": Mistake(
        lambda: BASE.replace("  config:\n", "  param_space:\n"),
        expect="unknown experiment key 'param_space'; the Tuner's param_space is this file's config:",
    ),
    "a healthy range written high end first (every episode ends at once)": Mistake(
        SAC_PENDULUM.replace("Pendulum-v1", "Hopper-v5") + "    env_config: {healthy_z_range: [2.0, 0.7]}\n",
        expect="ends every episode at its first step (3 resets, random actions: terminated after 1 step each), so "
        "there is nothing to learn; healthy_z_range: [2.0, 0.7] lists its high end first: write [low, high]",
    ),
    "an iteration's size inside evaluation_config": Mistake(
        cfg("evaluation_config: {explore: false, min_sample_timesteps_per_iteration: 5000}"),
        expect="evaluation_config.min_sample_timesteps_per_iteration: the evaluation runs the trained policy and never "
        "trains",
    ),
    "one anchor name for two templates": Mistake(
        "x-small: &net {hidden_dim: 16}\nx-big: &net {hidden_dim: 1024}\n"
        + BASE.replace("  config:\n", "  config:\n    <<: *net\n").replace("    hidden_dim: 16\n", ""),
        expect="the anchor &net is already defined on line 1; each anchor needs its own name: rename this one",
    ),
    "ASHA ranking the returns of an env grid together": Mistake(
        exp(
            "env: {grid_search: [dmc/cartpole-balance, dmc/cheetah-run]}",
            "scheduler: {type: ASHA, metric: env_runners/episode_return_mean, mode: max, grace_period: 1, max_t: 2}",
        ),
        expect="scheduler ASHA ranks all trials on env_runners/episode_return_mean together, across the envs of the "
        "grid (dmc/cartpole-balance, dmc/cheetah-run), whose returns are not on one scale",
    ),
    "a grid over whole configs": Mistake(
        "tiny:\n  run: SMAC\n  env: dmc/cartpole-balance\n  stop: {training_iteration: 2}\n  config:\n"
        "    grid_search:\n      - {num_particles: 4, seed: 0}\n      - {num_particles: 8, seed: 0}\n",
        expect="config: {grid_search: [2 configs]} sweeps whole configs, which Tune does not expand (it sweeps the "
        "values of keys); write the shared keys once and grid the one that differs: num_particles: {grid_search: "
        "[4, 8]}",
    ),
    "the whole experiment merged into its own config": Mistake(
        lambda: (
            BASE.replace("tiny:", "tiny: &base") + "k8:\n  <<: *base\n  config:\n    <<: *base\n    num_particles: 8\n"
        ),
        expect="`<<: *base` merges the whole experiment base (run, env, stop, max_failures, config) into config:; "
        "anchor its config (`config: &base_config`",
    ),
    "a whole experiment under a template's name, never merged": Mistake(
        lambda: BASE.replace("tiny:", "x-large-k16:") + BASE.replace("# Test-only", "#").replace("tiny:", "k4:"),
        expect="x-large-k16 is a whole experiment (config, env, run, stop) but is not run: a top-level name starting "
        "with 'x-' is a template, and no `*alias` merges this one; rename it (`large-k16:`) to run it",
    ),
    "keys below an alias (config: *cfg then more lines)": Mistake(
        lambda: (
            BASE.replace("  config:\n", "  config: &cfg\n")
            + "k8:\n  run: SMAC\n  env: dmc/cartpole-balance\n  config: *cfg\n    num_particles: 8\n"
        ),
        expect="`config: *cfg` is the anchored mapping as a whole and takes no keys below it; to add or change keys, "
        "merge it: `config: {<<: *cfg, num_particles: 8}`",
    ),
    "a grid_search inside a grid_search's list": Mistake(
        cfg("num_particles: {grid_search: [{grid_search: [2, 4]}, 8]}"),
        expect="num_particles: a grid_search inside a grid_search's list; write the one flat list of its values: "
        "num_particles: {grid_search: [2, 4, 8]}",
    ),
    "RLlib's old-stack private switch": Mistake(
        cfg("_disable_preprocessor_api: true"),
        expect="_disable_preprocessor_api=True is read by RLlib's old API stack only",
    ),
    "a sweep of torch threads run side by side": Mistake(
        cfg("torch_num_threads: {grid_search: [1, 2]}"),
        expect="the trials differ only in torch_num_threads, which changes how fast a run trains, not what it "
        "learns: the same run 2 times, side by side",
    ),
    "Fujimoto's TD3 start_timesteps": Mistake(
        cfg("start_timesteps: 1000"),
        expect="unknown config key 'start_timesteps' for SMAC; write num_steps_sampled_before_learning_starts",
    ),
    "jaxrl's temperature rate and entropy backup, both said": Mistake(
        cfg("temp_lr: 0.0003", "backup_entropy: false"),  # (cfg puts the last line first)
        expect="unknown config key 'backup_entropy' for SMAC; the TD target here always has the entropy term; "
        "td_entropy (SMAC) says which: marginal (Eq. 10) or conditional (Eq. 12) (see SMACConfig; all keys: "
        "SMACConfig().to_dict()); also unknown: 'temp_lr'",
    ),
    "TorchRL's frames_per_batch": Mistake(
        cfg("frames_per_batch: 1000"),
        expect="unknown config key 'frames_per_batch' for SMAC; write "
        "min_sample_timesteps_per_iteration (env steps per iteration; the run's length is the stop)",
    ),
    "Tianshou's test_num": Mistake(
        cfg("test_num: 10"), expect="unknown config key 'test_num' for SMAC; write evaluation_duration (episodes)"
    ),
    "a return stop at the top of a return without a lower bound": Mistake(
        SAC_PENDULUM.replace("Pendulum-v1", "Pusher-v5").replace(
            "{training_iteration: 1}", "{env_runners/episode_return_mean: 0}"
        ),
        expect="set a threshold below it (the returns have no lower bound: take one a trained run reaches)",
    ),
    "a uniform seed space": Mistake(
        cfg("seed: {uniform: [0, 1000]}"),
        expect="seed: {uniform: [...]} is not a search space (Tune reads grid_search only); write seed: {grid_search: "
        "[0, 1, 2]} (one trial per seed: num_samples: 1)",
    ),
    "Tune's Python call in a string": Mistake(
        cfg('actor_lr: "tune.grid_search([0.0001, 0.0003])"'),
        expect="actor_lr: 'tune.grid_search([0.0001, 0.0003])' is Tune's Python API in a string, which YAML does not "
        "run; write actor_lr: {grid_search: [0.0001, 0.0003]}",
    ),
    "RLlib's old-stack SAC networks": Mistake(
        SAC_PENDULUM + "    Q_model: {fcnet_hiddens: [64, 64]}\n",
        expect="unknown config key 'Q_model' for SAC; RLlib removed it: RLlib's old-stack SAC networks; RLlib's SAC "
        "now sizes both with model_config",
    ),
    "RLlib's old-stack model block for RLlib's SAC": Mistake(
        SAC_PENDULUM + "    model: {fcnet_hiddens: [64, 64]}\n",
        expect="model={'fcnet_hiddens': [64, 64]} is RLlib's old-API-stack model config, which SAC on the new stack "
        "never reads; write model_config:",
    ),
    "RLlib's logger_config for W&B": Mistake(
        cfg("logger_config: {wandb: {project: p}}"),
        expect="for W&B add a wandb: {project: NAME} block beside config (or pass --wandb)",
    ),
    "checkpoint_at_end inside stop": Mistake(
        exp("stop: {training_iteration: 2, checkpoint_at_end: true}"),
        expect="checkpoint_at_end is a checkpoint_config key, not a stop criterion: write checkpoint_config: "
        "{checkpoint_at_end: true} beside stop:",
    ),
    "a gymnasium env argument at 0 that the env divides by": Mistake(
        SAC_PENDULUM.replace("Pendulum-v1", "HalfCheetah-v5") + "    env_config: {frame_skip: 0}\n",
        expect="float division by zero, by env_config frame_skip: 0; it must be above 0",
    ),
    "a SACFlow width grid over null and the value null stands for": Mistake(
        lambda: _other_run("SACFlow").replace(
            "    hidden_dim: 16\n", "    hidden_dim: 16\n    flow_hidden_dim: {grid_search: [null, 16]}\n"
        ),
        expect="run the same settings (flow_hidden_dim=None is hidden_dim (16))",
    ),
    "a uniform space over a power-of-two count": Mistake(
        cfg("num_particles: {uniform: [2, 16]}"), expect="write num_particles: {grid_search: [2, 4, 8, 16]}"
    ),
    "MountainCarContinuous's goal reward as a return stop": Mistake(
        SAC_PENDULUM.replace("Pendulum-v1", "MountainCarContinuous-v0").replace(
            "{training_iteration: 1}", "{env_runners/episode_return_mean: 100}"
        ),
        expect="is the most an episode of MountainCarContinuous-v0 can return (100 once at the goal, minus up to 0.1 "
        "per step of 999)",
    ),
    "ASHA's time_attr set to the return": Mistake(
        exp("scheduler: {type: ASHA, time_attr: env_runners/episode_return_mean, max_t: 2, grace_period: 1}"),
        expect="scheduler time_attr env_runners/episode_return_mean is a metric, not a time",
    ),
    "a TD3 policy delay past the run's updates": Mistake(
        lambda: (
            _other_run("TD3").replace("  stop: {training_iteration: 2}", "  stop: {training_iteration: 20}")
            + "    policy_delay: 1000\n"
        ),
        expect="policy_delay=1,000: the run's ~",
    ),
    "TD3 exploration noise over the whole action range": Mistake(
        lambda: _other_run("TD3") + "    exploration_noise: 1.0\n",
        expect="exploration_noise=1.0 must be in [0, 1) (TD3: 0.1; the actions span [-1, 1]",
    ),
    "SpinningUp's update_after": Mistake(
        cfg("update_after: 1000"), expect="'update_after' for SMAC; write num_steps_sampled_before_learning_starts"
    ),
    "a plot flag of matplotlib's": Mistake(
        command=("plot", "{dir}", "--ylim", "0", "1000"), expect="rllib plot has no --ylim; its options:"
    ),
    "a camera flag for the evaluation video": Mistake(
        command=("evaluate", "{dir}", "--camera", "1"),
        expect="rllib evaluate has no --camera: the video films the checkpoint's env with its env_config camera_id",
    ),
    "REDQ's critic ensemble": Mistake(
        cfg("num_critics: 10"), expect="'num_critics' for SMAC; the critics here are always two (twin Q"
    ),
    "a deterministic switch inside evaluation_config": Mistake(
        cfg("evaluation_config: {deterministic: true}"),
        expect="unknown evaluation_config key 'deterministic' for SMAC; the deterministic policy (the mean action) is "
        "explore: false",
    ),
    "CleanRL's torch_deterministic": Mistake(
        cfg("torch_deterministic: true"), expect="a reproducible run is seed: N with async_learning: false"
    ),
    "SpinningUp's max_ep_len": Mistake(
        cfg("max_ep_len: 1000"), expect="an episode's limit is env_config: {time_limit: SECONDS} (dmc)"
    ),
    "SB3's n_envs, save_freq and log_interval": Mistake(
        cfg("n_envs: 4", "save_freq: 10", "log_interval: 5"),  # (cfg puts the last line first)
        expect="'log_interval' for SMAC; one result (a progress line, a row of progress.csv) comes per iteration, "
        "whose size is min_sample_timesteps_per_iteration (env steps) (see SMACConfig; all keys: "
        "SMACConfig().to_dict()); also unknown: 'save_freq', 'n_envs'",
    ),
    "a mixed-precision switch": Mistake(cfg("mixed_precision: true"), expect="mixed precision is autocast"),
    "Tune's sample_from with a lambda": Mistake(
        cfg("num_particles: {sample_from: 'lambda spec: 8'}"),
        expect="num_particles: {sample_from: ...} is not a search space here (Tune reads grid_search only, and no "
        "Python from YAML); write num_particles: {grid_search: [1, 2]} with the values to try",
    ),
    "a randint seed space": Mistake(
        cfg("seed: {randint: [0, 2]}"),
        expect="seed: {randint: [...]} is not a search space (Tune reads grid_search only); write seed: "
        "{grid_search: [0, 1]}",
    ),
}


def _argv(mistake: Mistake, tmp_path) -> list[str]:
    path = tmp_path / "mistake.yaml"
    content = mistake.yaml() if callable(mistake.yaml) else mistake.yaml
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    names = {"{yaml}": str(path), "{file}": str(a_file), "{dir}": str(tmp_path)}
    argv = [names.get(a, a) for a in (*mistake.command, *mistake.args)]
    return argv + ["--dry-run"] if argv[0] == "train" else argv  # all the checks, never a run


def run_cli(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse
        return e.code


@pytest.mark.parametrize("name", list(MISTAKES))
def test_mistake_is_one_line_exit_2_before_ray(name, tmp_path, capfd, monkeypatch, ray_never_starts):
    monkeypatch.chdir(tmp_path)
    mistake = MISTAKES[name]
    code = run_cli(_argv(mistake, tmp_path))
    out, err = capfd.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    assert 1 <= len(lines) <= 3, err
    assert lines[0].startswith("rllib: error: ") and mistake.expect in lines[0], lines[0]


def test_mistake_table_is_large_and_distinct():
    assert len(MISTAKES) >= 60
    inputs = [(m.yaml() if callable(m.yaml) else m.yaml, m.command, m.args) for m in MISTAKES.values()]
    assert len({repr(i) for i in inputs}) == len(inputs), "every row is a different mistake"


# --------------------------------------------------------------------------------------------- not mistakes


def _dry_run(tmp_path, capfd, text: str, *args: str) -> str:
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    code = run_cli(["train", "file", str(path), *args, "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0, err
    return out


def test_wandb_checkpoint_uploads_say_how_much_replay_they_copy(tmp_path, capfd):
    """``upload_checkpoints: true``: each checkpoint (with its replay) becomes a W&B artifact; the count and sizes are
    said once, before Ray (100 steps of 5-D cartpole states per iteration: a few KiB each)."""
    path = tmp_path / "ok.yaml"
    path.write_text(exp("checkpoint_config: {checkpoint_frequency: 1}", "wandb: {upload_checkpoints: true}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    err = capfd.readouterr().err
    said = re.findall(r"copies each of the 2 checkpoints \(each holds the replay buffer: up to ~(\d+) KiB", err)
    assert len(said) == 1 and 1 <= int(said[0]) <= 64, err
    path.write_text(exp("checkpoint_config: {checkpoint_frequency: 1}", "wandb: {upload_checkpoints: false}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "upload_checkpoints" not in capfd.readouterr().err


def test_a_thread_sweep_one_trial_at_a_time_is_a_speed_comparison(tmp_path, capfd):
    text = cfg("torch_num_threads: {grid_search: [1, 2]}").replace(
        "  max_failures: 0\n", "  max_failures: 0\n  max_concurrent_trials: 1\n"
    )
    assert "2 trial(s)" in _dry_run(tmp_path, capfd, text)


def test_an_episode_count_stop_on_a_time_limited_task_is_a_cap(tmp_path, capfd):
    """Every DMC episode ends at its time limit: a stop on the episode count is reached, nothing is said."""
    text = exp("stop: {env_runners/num_episodes_lifetime: 8}")
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "has no cap" not in capfd.readouterr().err


def test_an_evaluation_interval_of_a_thousand_iterations_under_an_evaluation_stop_warns(tmp_path, capfd):
    text = exp("stop: {evaluation/env_runners/episode_return_mean: 99, time_total_s: 36000}")
    path = tmp_path / "ok.yaml"
    path.write_text(text.replace("evaluation_interval: 2", "evaluation_interval: 1000"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    err = capfd.readouterr().err
    assert "evaluation_interval: 1,000 counts iterations: the first evaluation, the first chance for the stop" in err
    assert (
        "comes after ~100,000 env steps; for an evaluation every 1,000 env steps write evaluation_interval: 10" in err
    )


def test_an_old_api_stop_key_is_read_as_the_new_one_and_said_once(tmp_path, capfd):
    path = tmp_path / "old.yaml"
    path.write_text(exp("stop: {episode_reward_mean: 99, training_iteration: 2}"))  # capped: no warning beside it
    code = run_cli(["train", "file", str(path), "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "stop {'env_runners/episode_return_mean': 99, 'training_iteration': 2}" in out, out
    assert err.splitlines() == [
        f"rllib: note: {path}:5: stop criterion 'episode_reward_mean' is the old API stack's name; read as "
        "'env_runners/episode_return_mean' (write that to silence this note)"
    ]
    path.write_text(exp("stop: {agent_timesteps_total: 200}"))  # one agent: its steps are the env steps
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "stop {'num_env_steps_sampled_lifetime': 200}" in capfd.readouterr().out


def test_config_overrides_env_and_two_configs_merge_in_order(tmp_path, capfd):
    out = _dry_run(
        tmp_path,
        capfd,
        BASE,
        "--config",
        '{"env": "dmc/cartpole-swingup", "num_particles": 8}',
        "--config",
        '{"latent_dim": {"grid_search": [2, 4]}, "num_particles": 16}',
    )
    assert "tiny: SMAC on dmc/cartpole-swingup, 2 trial(s)" in out, out

    from smac_rllib.cli.experiment_spec import json_args
    from smac_rllib.cli.yaml_loader import Overrides, load_experiments

    overrides = Overrides(
        config=json_args(
            [
                '{"env": "dmc/cartpole-swingup", "num_particles": 8, "env_config": {"action_repeat": 2}}',
                '{"num_particles": 16, "env_config": {"time_limit": 2.0}}',
            ],
            "--config",
        )
    )
    (spec,) = load_experiments(str(tmp_path / "ok.yaml"), overrides)
    assert {(c.env, c.num_particles) for c in spec.configs} == {("dmc/cartpole-swingup", 16)}, "the later --config wins"
    assert spec.configs[0].env_config == {"action_repeat": 2, "time_limit": 2.0}, "nested mappings merge"


def test_grid_larger_than_256_points_is_validated_and_counted_in_full(tmp_path, capfd):
    out = _dry_run(
        tmp_path,
        capfd,
        cfg(
            "latent_dim: {grid_search: %s}" % list(range(1, 51)),
            "estimator: {grid_search: [nested, naive, mlmc]}",
            "seed: {grid_search: [0, 1]}",
        ),
    )
    assert "tiny: SMAC on dmc/cartpole-balance, 300 trial(s)" in out, out


def test_pixel_keys_with_from_pixels_in_a_grid_are_fine(tmp_path, capfd):
    text = cfg(
        "env_config: {time_limit: 1.0, from_pixels: true, camera_id: 1, pixel_noise_std: {grid_search: [0.0, 0.05]}}",
        "batch_size_B: 4",
        "batch_length_T: 8",
    )
    assert "2 trial(s)" in _dry_run(tmp_path, capfd, without_state_keys(text))


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "address, expect",
    [
        (None, "no Ray cluster answers at 127.0.0.1:{port} (Connection refused"),
        ("head-node", "--address 'head-node' must be host:port"),
    ],
)
def test_address_with_nothing_behind_it_is_one_line_within_seconds(address, expect, tmp_path, capfd, ray_never_starts):
    """Ray itself retries an address without a cluster forever (seen: > 2 min of GCS warnings)."""
    port = _free_port()
    address = address or f"127.0.0.1:{port}"
    path = tmp_path / "ok.yaml"
    path.write_text(BASE)
    started = time.time()
    code = run_cli(["train", "file", str(path), "--storage-path", str(tmp_path), "--address", address])
    took = time.time() - started
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expect.format(port=port) in err[0], err
    assert took < 15, f"{took:.1f} s"
    assert os.listdir(tmp_path) == ["ok.yaml"], "nothing written"


@pytest.mark.parametrize("server, what", [("http", "(an HTTP server?)"), ("tcp", "(a server that hangs up without")])
@pytest.mark.parametrize("dry_run", [False, True])
def test_an_address_where_another_server_listens_is_one_line_within_seconds(
    server, what, dry_run, tmp_path, capfd, ray_never_starts
):
    """A TCP server that is not Ray at --address (seen: an http.server) passed the TCP probe, then ``ray.init`` retried
    its GCS for minutes; now the HTTP/2 and GCS probes refuse it, in a real run and in ``--dry-run`` alike. The server
    listens where ``ray.init`` connects (Ray replaces 127.0.0.1 by this machine's IP)."""
    import http.server
    import socketserver
    import threading

    from ray._private.services import get_node_ip_address

    class HangUp(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.recv(100)

    class QuietHTTP(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # its request log goes to stderr
            pass

    cls = http.server.ThreadingHTTPServer if server == "http" else socketserver.ThreadingTCPServer
    handler = QuietHTTP if server == "http" else HangUp
    with cls((get_node_ip_address(), 0), handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        address = "%s:%d" % httpd.server_address[:2]
        path = tmp_path / "ok.yaml"
        path.write_text(BASE)
        started = time.time()
        argv = ["train", "file", str(path), "--storage-path", str(tmp_path), "--address", address]
        code = run_cli(argv + (["--dry-run"] if dry_run else []))
        took = time.time() - started
        httpd.shutdown()
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"nothing at {address} answers as a Ray cluster {what}" in err[0], err
    assert "check --address / $RAY_ADDRESS (the head's GCS port, default 6379)" in err[0], err
    assert took < 15, f"{took:.1f} s"


def test_dry_run_prints_the_resource_warnings_of_a_local_run(tmp_path, capfd, ray_never_starts):
    """``--dry-run`` says what a real run's start would: here the GPU a CPU machine does not have."""
    from smac_rllib.cli.resources import local_gpus

    if local_gpus():
        pytest.skip("a GPU here: no fallback to warn about")
    path = tmp_path / "ok.yaml"
    path.write_text(BASE)
    code = run_cli(["train", "file", str(path), "--config", '{"num_gpus_per_learner": 1}', "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "rllib: warning: no usable GPU here (0 available)" in err and "running the learner on CPU" in err, err
    assert "1 CPU + 0 GPU per trial" in out or "+ 0 GPU per trial" in out, out
    runner_gpu = '{"num_env_runners": 1, "num_gpus_per_env_runner": 1}'
    assert run_cli(["train", "file", str(path), "--config", runner_gpu, "--dry-run"]) == 0
    assert "running the env runners on CPU" in capfd.readouterr().err


@pytest.mark.parametrize("key", ["num_learners", "num_cpus_for_main_process", "num_env_runners"])
def test_more_cpus_than_the_machine_names_the_setting_that_asks_for_them(key, tmp_path, capfd, ray_never_starts):
    """The oversubscription warning (an error with --strict-resources) names the setting whose smallest value saves
    the most CPUs, not always num_env_runners."""
    many = (os.cpu_count() or 1) + 2
    path = tmp_path / "ok.yaml"
    path.write_text(BASE)
    code = run_cli(["train", "file", str(path), "--config", f'{{"{key}": {many}}}', "--strict-resources", "--dry-run"])
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"lower {key} (now {many};" in err[0] and "or drop --strict-resources" in err[0], err


def test_parallel_evaluation_runners_are_named_when_they_oversubscribe(tmp_path, capfd, ray_never_starts):
    """evaluation_parallel_to_training needs one evaluation runner: the fix named is the rest of them."""
    many = (os.cpu_count() or 1) + 2
    path = tmp_path / "ok.yaml"
    path.write_text(cfg(f"evaluation_num_env_runners: {many}", "evaluation_parallel_to_training: true"))
    assert run_cli(["train", "file", str(path), "--strict-resources", "--dry-run"]) == 2
    assert f"lower evaluation_num_env_runners (now {many}; 1 saves {many - 1} of the" in capfd.readouterr().err


def test_a_bucket_that_does_not_answer_is_one_line_before_ray(tmp_path, capfd, monkeypatch, ray_never_starts):
    """Without network (as here) pyarrow's GCS client would retry for 15 minutes, the run printing nothing; with it,
    the made-up bucket answers with an error, which is the line instead."""
    from smac_rllib.cli import bucket_probe

    monkeypatch.setattr(bucket_probe, "PROBE_TIMEOUT_S", 3.0)
    started = time.monotonic()
    code = run_cli(_argv(Mistake(args=("--storage-path", "gcs://my-lab-bucket/smac")), tmp_path))
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "storage path gcs://my-lab-bucket/smac cannot be reached: " in err[0], err
    assert "(Google Cloud Storage is gs://)" in err[0], err
    assert time.monotonic() - started < 60


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_storage_path_without_write_permission(tmp_path, capfd):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    path = tmp_path / "ok.yaml"
    path.write_text(BASE)
    code = run_cli(["train", "file", str(path), "--storage-path", str(locked / "results"), "--dry-run"])
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"cannot write to {locked}" in err[0], err


def test_autocast_null_is_what_the_config_documents_and_a_wrong_type_still_is_refused(tmp_path, capfd):
    """``autocast: null`` (fp32, documented by SMACConfig) passes the CLI's type check, as the config accepts it; a
    number is still the one-line type error. The CLI takes the types the config class declares (``FIELD_TYPES``)."""
    from smac_rllib.algorithms import SMACConfig

    pixels = (
        '{"env_config": {"from_pixels": true, "time_limit": 1.0}, "autocast": null, "world_model_preset": "tiny", '
        '"batch_size_B": 4, "batch_length_T": 8}'
    )
    out = _dry_run(tmp_path, capfd, without_state_keys(BASE), "--config", pixels)
    assert "tiny: SMAC on dmc/cartpole-balance, 1 trial(s)" in out, out
    assert (
        SMACConfig()
        .environment("dmc/cartpole-balance", env_config={"from_pixels": True})
        .training(autocast=None)
        .config_errors()
        == []
    )
    path = tmp_path / "bad.yaml"
    path.write_text(without_state_keys(BASE))
    code = run_cli(["train", "file", str(path), "--config", pixels.replace("null", "3"), "--dry-run"])
    _, err = capfd.readouterr()
    assert code == 2 and "autocast=3 is unknown; use one of" in err


def test_a_gymnasium_env_config_key_the_env_does_not_take_is_refused_before_ray(tmp_path, capfd):
    """``env: Pendulum-v1`` with an ``env_config`` key Pendulum does not take: one line naming the key and the env, exit
    2, before Ray starts (it used to start Ray and fail inside the trial); a key it takes (``g``) passes."""
    path = tmp_path / "gym.yaml"
    path.write_text(
        BASE.replace("env: dmc/cartpole-balance", "env: Pendulum-v1").replace(
            "env_config: {time_limit: 1.0}", "env_config: {gravity: 9.8}"
        )
    )
    code = run_cli(["train", "file", str(path), "--dry-run"])
    _, err = capfd.readouterr()
    assert (
        code == 2
        and "env_config key 'gravity' is not an argument of 'Pendulum-v1'" in err
        and len(err.strip().splitlines()) == 1
    ), err
    path.write_text(
        BASE.replace("env: dmc/cartpole-balance", "env: Pendulum-v1").replace(
            "env_config: {time_limit: 1.0}", "env_config: {g: 9.8}"
        )
    )
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0, capfd.readouterr().err


_LONG_RUN = '{"env_runners/num_env_steps_sampled_lifetime": 100000000000}'


@pytest.mark.parametrize(
    "override, stop, largest",
    [
        ('{"hidden_dim": 200000}', None, "the largest term is the networks (80,0"),
        (
            '{"replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 10000000000}}',
            _LONG_RUN,
            "the largest term is the replay buffer (10,000,000,000 steps)",
        ),
    ],
)
def test_a_trial_that_cannot_fit_in_memory_is_refused_before_ray(tmp_path, capfd, override, stop, largest):
    """A width, or a replay capacity that a long run fills, whose memory exceeds the machine's: exit 2 and one line
    naming the largest term and the setting to lower (cli/memory.py: networks counted on the meta device, replay at its
    dtype), before Ray starts. The same capacity with BASE's 2-iteration stop fits: the replay never fills."""
    path = tmp_path / "big.yaml"
    path.write_text(BASE)
    if stop is not None:
        assert run_cli(["train", "file", str(path), "--config", override, "--dry-run"]) == 0, capfd.readouterr().err
        capfd.readouterr()
    code = run_cli(["train", "file", str(path), "--config", override, "--dry-run"] + (["--stop", stop] if stop else []))
    _, err = capfd.readouterr()
    err = "\n".join(line for line in err.splitlines() if "--stop replaces the file's stop" not in line)  # said too
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert (
        "one trial needs ~" in err
        and "Ray lets this machine's processes use" in err
        and largest in err
        and "; lower " in err
    ), err


def test_resume_into_an_experiment_of_another_algorithm_is_refused(tmp_path, capfd):
    """``--resume`` after ``run:`` changed: the stored trials ran another trainable; one line, exit 2, before Ray."""
    exp = tmp_path / "tiny"
    (exp / "TD3_abcde_00000").mkdir(parents=True)
    (exp / "tuner.pkl").write_bytes(b"")  # what Tune's can_restore looks for
    path = tmp_path / "x.yaml"
    path.write_text(BASE)
    code = run_cli(["train", "file", str(path), "--storage-path", str(tmp_path), "--resume", "--dry-run"])
    _, err = capfd.readouterr()
    assert code == 2 and f"--resume: {exp} was run with run: TD3, the file now says run: SMAC" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_yml_for_a_yaml_file_beside_it_names_it(tmp_path, capfd, monkeypatch):
    (tmp_path / "case.yaml").write_text(BASE)
    monkeypatch.chdir(tmp_path)
    assert run_cli(["train", "file", "case.yml", "--dry-run"]) == 2
    assert "no such file: case.yml; did you mean case.yaml?" in capfd.readouterr().err


def test_a_windows_path_whose_backslash_the_shell_dropped_names_the_file(tmp_path, capfd, monkeypatch):
    """``rllib train file configs\\case.yaml`` unquoted reaches us as ``configscase.yaml``: the file meant is named."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "case.yaml").write_text(BASE)
    monkeypatch.chdir(tmp_path)
    assert run_cli(["train", "file", "configscase.yaml", "--dry-run"]) == 2
    assert "no such file: configscase.yaml; did you mean configs/case.yaml? (the shell drops an unquoted backslash" in (
        capfd.readouterr().err
    )


def test_a_file_read_through_a_pipe_is_read_once(tmp_path, capfd):
    """``rllib train file <(sed ... template.yaml)`` (a /dev/fd pipe, readable once) runs as the file would."""
    read, write = os.pipe()
    os.write(write, BASE.encode())
    os.close(write)
    try:
        assert run_cli(["train", "file", f"/dev/fd/{read}", "--dry-run"]) == 0, capfd.readouterr().err
    finally:
        os.close(read)
    assert "tiny: SMAC on dmc/cartpole-balance, 1 trial(s)" in capfd.readouterr().out


def test_resume_from_the_experiment_directory_names_the_storage_path_above_it(tmp_path, capfd):
    """``--storage-path`` given the experiment's own directory (the "Results:" line) with ``--resume``: the path to
    pass is named; and W&B variables that Tune's callback overrides (the run's name, id, group) are said."""
    exp = tmp_path / "tiny"
    (exp / "SMAC_abcde_00000").mkdir(parents=True)
    (exp / "tuner.pkl").write_bytes(b"")  # what Tune's can_restore looks for
    path = tmp_path / "x.yaml"
    path.write_text(BASE)
    code = run_cli(["train", "file", str(path), "--storage-path", str(exp), "--resume", "--dry-run"])
    err = capfd.readouterr().err
    assert (
        code == 2
        and f"--resume: {exp} is the experiment's own directory; the storage path is the one above it: "
        f"--storage-path {tmp_path}"
        in err
    ), err
    code = run_cli(["train", "file", str(path), "--storage-path", str(exp), "--dry-run"])  # a new run nested in it
    err = capfd.readouterr().err
    assert (
        code == 2
        and f"storage path {exp} is an experiment's own directory (its trials and tuner.pkl): a new run "
        f"would go into {exp / 'tiny'}, inside it; pass the directory above it, --storage-path {tmp_path}"
        in err
    ), err
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WANDB_NAME", "smac-balance")
        env.setenv("WANDB_MODE", "offline")
        path.write_text(exp_lines := BASE.replace("  max_failures: 0\n", "  max_failures: 0\n  wandb: {}\n"))
        assert "wandb: {}" in exp_lines and run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "WANDB_NAME=smac-balance is not read: Tune's W&B callback names each trial's run after the trial" in (
        capfd.readouterr().err
    )


def test_resume_with_a_setting_the_run_did_not_have_is_refused(tmp_path, capfd):
    """``--resume`` continues a run with the config it started with: a changed setting (here by ``--config``) would be
    ignored by Tune, so it is named with both values; one line, exit 2, before Ray."""
    import json

    from smac_rllib.cli.yaml_loader import load_experiments

    path = tmp_path / "x.yaml"
    path.write_text(BASE)
    [spec] = load_experiments(str(path))
    exp = tmp_path / "tiny"
    (exp / "SMAC_abcde_00000").mkdir(parents=True)
    (exp / "SMAC_abcde_00000" / "params.json").write_text(json.dumps(spec.param_space))  # as Tune writes it
    (exp / "tuner.pkl").write_bytes(b"")  # what Tune's can_restore looks for
    hidden = spec.param_space["hidden_dim"]
    args = ["train", "file", str(path), "--storage-path", str(tmp_path), "--resume", "--dry-run"]
    code = run_cli([*args, "--config", json.dumps({"hidden_dim": 2 * hidden})])
    _, err = capfd.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert (
        f"--resume continues {exp} with the config it ran with, and Tune would ignore what changed: hidden_dim " in err
    )
    assert f"(ran with {hidden}; now {2 * hidden}); resume with the settings it ran with" in err, err
    # a kill while Tune copied a trial's params.json leaves it empty: that trial is not compared, the others are
    (exp / "SMAC_abcde_00001").mkdir()
    (exp / "SMAC_abcde_00001" / "params.json").write_text("")
    code = run_cli([*args, "--config", json.dumps({"hidden_dim": 2 * hidden})])
    assert code == 2 and "Traceback" not in capfd.readouterr().err
    assert run_cli(args) == 0, capfd.readouterr().err


def test_plot_out_a_directory_writes_curves_png_into_it(tmp_path, capfd):
    import json

    trial = tmp_path / "exp" / "SMAC_abcde_00000"
    trial.mkdir(parents=True)
    rows = [
        {
            "training_iteration": i,
            "env_runners": {"num_env_steps_sampled_lifetime": 1000 * i, "episode_return_mean": 10.0 * i},
            "learners": {"default_policy": {"critic/loss": 1.0 / i}},
            "config": {"seed": 0},
            "time_total_s": i,
        }
        for i in (1, 2, 3)
    ]
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_dir = tmp_path / "figures"
    out_dir.mkdir()
    assert run_cli(["plot", str(tmp_path / "exp"), "--out", str(out_dir)]) == 0
    assert (out_dir / "curves.png").stat().st_size > 1000
    assert f"wrote {out_dir / 'curves.png'}" in capfd.readouterr().out
    metric = "info/learner/default_policy/learner_stats/critic_loss"  # the old stack's name of a loss
    assert run_cli(["plot", str(tmp_path / "exp"), "--metric", metric]) == 2
    assert "the results' key with its words: 'learners/default_policy/critic/loss': pass that" in capfd.readouterr().err
    assert run_cli(["plot", str(trial / "result.json")]) == 2  # a trial's file: the directories are named
    assert f"result.json is a file; rllib plot reads a directory: the experiment's, rllib plot {tmp_path / 'exp'}" in (
        capfd.readouterr().err
    )
    (trial / "checkpoint_000000").mkdir()  # a checkpoint passed for its trial: the trial's results are named
    assert run_cli(["plot", str(trial / "checkpoint_000000")]) == 2
    assert (
        f"is inside the trial {trial}, whose results rllib plot reads: pass the experiment directory, rllib plot "
        f"{tmp_path / 'exp'}" in capfd.readouterr().err
    )


def test_storage_path_through_a_dangling_link_is_one_line_before_ray(tmp_path, capfd):
    link = tmp_path / "runs"
    link.symlink_to(tmp_path / "gone")
    path = tmp_path / "x.yaml"
    path.write_text(BASE)
    code = run_cli(["train", "file", str(path), "--storage-path", str(link / "sub"), "--dry-run"])
    _, err = capfd.readouterr()
    assert code == 2 and f"{link} is a link to {tmp_path / 'gone'}, which does not exist" in err, err


def test_a_pixel_update_too_big_for_a_cpu_learner_names_its_activations():
    """The activation term comes from the algorithm (``SMACConfig.update_memory_terms``); the CLI only adds terms up."""
    from smac_rllib.algorithms import SMACConfig
    from smac_rllib.cli.memory import GiB, memory_error

    config = (
        SMACConfig()
        .environment("dmc/cartpole-balance", env_config={"from_pixels": True, "time_limit": 1.0})
        .training(batch_size_B=2000, batch_length_T=50, num_particles=32, world_model_preset="tiny")
    )
    ((term, (size, key)),) = config.update_memory_terms().items()
    assert term.startswith("one update's activations (3,300,000 latent rows of width 300)") and size > 100 * GiB
    message = memory_error(config, available=64 * GiB)
    assert message and "the largest term is one update's activations" in message and "lower batch_size_B" in message


def test_a_trial_is_measured_against_the_memory_ray_lets_it_use(monkeypatch):
    """Ray's memory monitor kills workers once the node uses 95% of its memory (RAY_memory_usage_threshold): a trial
    needing 97% of the machine is refused, one needing 90% is not."""
    from smac_rllib.algorithms import SMACConfig
    from smac_rllib.cli import memory

    config = SMACConfig().environment("dmc/cartpole-balance", env_config={"time_limit": 1.0})
    need = sum(size for size, _ in memory.estimate(config).values())
    monkeypatch.setattr(memory, "physical_memory", lambda: int(need / 0.97))
    assert "more than the" in memory.memory_error(config) and "(95% of" in memory.memory_error(config)
    monkeypatch.setattr(memory, "physical_memory", lambda: int(need / 0.90))
    assert memory.memory_error(config) is None
    monkeypatch.setenv("RAY_memory_usage_threshold", "0.8")
    assert "(80% of" in memory.memory_error(config)


def test_what_the_stop_and_trial_rules_leave_alone(tmp_path, capfd):
    """Each refusal of the rows above has a neighbour that runs: the user decided, or nothing is lost."""
    # an explicit max_t in other units than the stop: the user's own cut
    _dry_run(tmp_path, capfd, exp("scheduler: {type: ASHA, time_attr: time_total_s, max_t: 3600}"))
    # evaluation on another task of the same domain: the same spaces, the trained module runs there
    _dry_run(tmp_path, capfd, cfg("evaluation_config: {explore: false, env: dmc/cartpole-swingup}"))
    # a loss ranked lowest first, a return highest first; a return stop within the task's bound
    _dry_run(
        tmp_path,
        capfd,
        exp(
            "checkpoint_config: {checkpoint_score_attribute: learners/default_policy/critic_loss, "
            "checkpoint_score_order: min}",
            "scheduler: {type: ASHA, mode: max}",
            "stop: {training_iteration: 2, env_runners/episode_return_mean: 99}",
        ),
    )
    # a setting switched off in some trials only: an estimator ablation that keeps the reference's MLMC option
    assert "2 trial(s)" in _dry_run(
        tmp_path, capfd, cfg("estimator: {grid_search: [nested, mlmc]}", "mlmc_average_level0: false")
    )
    # values that differ once parsed: true is not 1, mappings that differ in one value
    assert "2 trial(s)" in _dry_run(
        tmp_path, capfd, cfg("random_actions_before_learning: {grid_search: [true, false]}")
    )
    assert "2 trial(s)" in _dry_run(
        tmp_path,
        capfd,
        cfg(
            "replay_buffer_config: {grid_search: [{type: EpisodeReplayBuffer, capacity: 120}, "
            "{capacity: 150, type: EpisodeReplayBuffer}]}"
        ),
    )  # both below the run's 200 env steps: the second keeps more


def test_sweeps_that_differ_as_run_pass_and_asha_on_one_trial_is_a_warning(tmp_path, capfd):
    """Automatic values against explicit ones that differ, a factorial sweep whose switched-off setting is written once,
    and ASHA on a single trial: it runs (a plain run) with one warning that names the fix."""
    assert "2 trial(s)" in _dry_run(tmp_path, capfd, cfg("initial_alpha: {grid_search: [null, 0.2]}"))
    assert "2 trial(s)" in _dry_run(tmp_path, capfd, cfg("updates_per_env_step: {grid_search: [null, 0.5]}"))
    assert "2 trial(s)" in _dry_run(
        tmp_path, capfd, cfg("beta: {grid_search: [0.0, 0.1]}", "beta_scale: {grid_search: [alpha]}")
    )
    evaluated_other = cfg("evaluation_config: {explore: false, env_config: {time_limit: 1.0, action_repeat: 2}}")
    assert "1 trial(s)" in _dry_run(tmp_path, capfd, evaluated_other)
    path = tmp_path / "asha.yaml"
    path.write_text(evaluated_other)
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "evaluation_config runs action_repeat 2 (training: 1): the policy is evaluated on another task" in (
        capfd.readouterr().err
    )
    path.write_text(exp("local_dir: results"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "local_dir is Tune's older name; read as storage_path (write that to silence this note)" in (
        capfd.readouterr().err
    )
    path.write_text(cfg("updates_per_env_step: 20"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "updates_per_env_step=20 on a CPU learner: ~2,000 updates for the run's 200 env steps" in (
        capfd.readouterr().err
    )
    warm_up = cfg("num_steps_sampled_before_learning_starts: 10000", "env_config: {time_limit: 1.0, action_repeat: 8}")
    path.write_text(
        warm_up.replace("stop: {training_iteration: 2}", "stop: {env_runners/num_env_steps_sampled_lifetime: 12500}")
    )
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert (
        "num_steps_sampled_before_learning_starts=10000 is 80% of the run's 12,500 env steps: the policy acts "
        in (err := capfd.readouterr().err)
        and "it counts agent steps, 80,000 frames at action_repeat 8 (a warm-up of 10000 frames is 1250 agent" in err
    )
    assert run_cli(["train", "file", str(path), "--dry-run", "--stop", '{"training_iteration": 130}']) == 0
    assert "num_steps_sampled_before_learning_starts" not in capfd.readouterr().err  # a smoke test's --stop
    many = cfg("num_particles: 1024").replace("stop: {training_iteration: 2}", "stop: {training_iteration: 50000}")
    path.write_text(cfg(f"seed: {{grid_search: {list(range(101))}}}"))  # 101 runs, 2 at a time on 2 cores
    with pytest.MonkeyPatch.context() as machine:
        machine.setattr(os, "cpu_count", lambda: 2)
        assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "tiny: 101 trials, at most 2 at a time on this machine (1 CPUs each, 2 here): 51 rounds back to back" in (
        capfd.readouterr().err
    )
    path.write_text(exp("stop: {env_runners/episode_return_max: 90, training_iteration: 2}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "stop criterion env_runners/episode_return_max: 90 ends the run on one episode's return" in (
        capfd.readouterr().err
    )
    every = exp("checkpoint_config: {checkpoint_frequency: 1}", "stop: {training_iteration: 5000}")
    path.write_text(every)  # 5000 checkpoints of a replay growing to 500k transitions
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "tiny: checkpoint_frequency: 1 writes 5,000 checkpoints by the stop, each with the replay buffer" in (
        capfd.readouterr().err
    )
    path.write_text(many)  # 5M updates of 1025 particles: ~11 days on this CPU
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert (
        "updates of K+1 = 1025 particles x 16 transitions on a CPU learner: ~0.19 s each, ~"
        in (err := capfd.readouterr().err)
        and "h to the stop (scaled from 0.05 s at K=16, batch 256" in err
    ), err
    path.write_text(exp("scheduler: {type: ASHA, mode: max}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    err = capfd.readouterr().err
    assert "this experiment has one trial: ASHA never stops it" in err and "drop the scheduler" in err, err


def test_command_line_config_and_stop_against_the_files_own(tmp_path, capfd):
    """``--config`` merges a mapping into each point of the file's grid of mappings (the sweep stays); ``--stop``
    replaces the file's stop and warns when a criterion it drops would have ended the run sooner; a shorter
    ``--stop`` (the usual smoke test) is silent. SMAC with K = 0 from states warns that it is not SAC."""
    grid = cfg("env_config: {grid_search: [{time_limit: 1.0}, {time_limit: 1.0, action_repeat: 2}]}")
    path = tmp_path / "grid.yaml"
    path.write_text(grid)
    specs = load_experiments(str(path), Overrides(config={"env_config": {"time_limit": 0.5}}))
    assert [c.env_config for c in specs[0].configs] == [{"time_limit": 0.5}, {"time_limit": 0.5, "action_repeat": 2}]
    path.write_text(BASE)
    assert run_cli(["train", "file", str(path), "--stop", '{"time_total_s": 3600}', "--dry-run"]) == 0
    err = capfd.readouterr().err
    assert "--stop replaces the file's stop, so {\"training_iteration\": 2} (iteration 2) no longer ends the run" in err
    assert run_cli(["train", "file", str(path), "--stop", '{"env_runners/num_env_steps_sampled_lifetime": 200}',
                    "--dry-run"]) == 0  # fmt: skip
    assert "--stop replaces" not in capfd.readouterr().err
    both = ["--stop", '{"training_iteration": 2}', "--stop", '{"env_runners/num_env_steps_sampled_lifetime": 300}']
    assert run_cli(["train", "file", str(path), *both, "--dry-run"]) == 0  # merged, as documented, and said
    assert 'the 2 --stop flags merge into {"training_iteration": 2, "env_runners/num_env_steps_sampled_lifetime": ' \
        "300}: the first criterion met ends the run" in capfd.readouterr().err  # fmt: skip
    path.write_text(cfg("seed: {grid_search: [0, 1, 2]}"))
    assert run_cli(["train", "file", str(path), "--seed", "5", "--dry-run"]) == 0
    assert "--seed 5 replaces the file's seed grid [0, 1, 2]: one seed instead of 3" in capfd.readouterr().err
    path.write_text(exp("stop: {env_runners/episode_return_mean: 99}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "has no cap in iterations, env steps or time: if it is never reached the run never ends" in (
        capfd.readouterr().err
    )
    path.write_text(".a: &a {num_particles: 8}\n.b: &b {num_particles: 4}\n" + cfg("<<: [*a, *b]"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "`<<:` keeps *a's num_particles: 8 over *b's num_particles: 4 (in a merge list the earlier mapping" in (
        capfd.readouterr().err
    )
    path.write_text(cfg("num_particles: 0"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "num_particles: 0 from states trains SMAC's latent-variable policy" in capfd.readouterr().err


def test_a_relative_file_path_in_env_config_names_the_absolute_one(tmp_path, capfd, monkeypatch):
    """Tune runs each trial in its own directory: a path relative to where `rllib train` runs names nothing there."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "cheetah.xml").write_text("<mujoco/>")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "rel.yaml"
    path.write_text(cfg("env_config: {xml_file: models/cheetah.xml}").replace("dmc/cartpole-balance", "Pendulum-v1"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert f"is a relative path: Tune runs each trial in its own directory, where it names nothing; write the " \
        f"absolute path '{tmp_path / 'models' / 'cheetah.xml'}'" in capfd.readouterr().err  # fmt: skip


def test_plot_reads_an_old_metric_name_and_names_the_reported_ones(tmp_path, capfd):
    import json

    trial = tmp_path / "exp" / "SMAC_abcde_00000"
    trial.mkdir(parents=True)
    rows = [{"training_iteration": i, "env_runners": {"num_env_steps_sampled_lifetime": 10 * i,
             "episode_return_mean": 1.0 * i}, "config": {"seed": 0}} for i in (1, 2)]  # fmt: skip
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "c.png"
    assert run_cli(["plot", str(tmp_path / "exp"), "--metric", "episode_reward_mean", "--out", str(out)]) == 0
    assert "'episode_reward_mean' is the old API stack's name; read as 'env_runners/episode_return_mean'" in (
        capfd.readouterr().err
    )
    assert run_cli(["plot", str(tmp_path / "exp"), "--metric", "learners/x", "--out", str(out)]) == 2
    assert "reports 'learners/x'; they report 'env_runners/episode_return_mean': pass one" in capfd.readouterr().err


def test_a_result_key_whose_name_holds_a_slash_is_found_as_tune_flattens_it():
    """Our learners report ``critic/loss`` under ``learners/default_policy``: Tune's flattened key
    ``learners/default_policy/critic/loss`` names it, and the never-reported-key watch must find it too."""
    from smac_rllib.cli.results import lookup

    result = {"learners": {"default_policy": {"critic/loss": 0.3, "a": {"b": 1}}}, "x/y": 2}
    assert lookup(result, "learners/default_policy/critic/loss") == 0.3
    assert lookup(result, "learners/default_policy/a/b") == 1 and lookup(result, "x/y") == 2
    assert lookup(result, "learners/default_policy/critic") is None and lookup(result, "learners/nope") is None


def test_evaluate_names_the_checkpoint_or_trial_a_directory_leaves_open(tmp_path):
    """An experiment directory of several trials, and a directory inside a checkpoint (one component's state), are
    refused with the directory to pass; an experiment of one trial resolves to its newest checkpoint."""
    from smac_rllib.cli.errors import UserError
    from smac_rllib.cli.evaluate import resolve_checkpoint

    for trial in ("T_00000_seed=0", "T_00001_seed=1"):
        module = tmp_path / "exp" / trial / "checkpoint_000000" / "learner_group" / "learner" / "rl_module"
        module.mkdir(parents=True)
        (module.parents[2] / "rllib_checkpoint.json").write_text("{}")
    with pytest.raises(UserError, match=r"holds the checkpoints of 2 trials \(T_00000_seed=0, T_00001_seed=1\)"):
        resolve_checkpoint(str(tmp_path / "exp"))
    with pytest.raises(UserError, match=r"is a part of the checkpoint .*T_00000_seed=0/checkpoint_000000 \(one"):
        resolve_checkpoint(str(tmp_path / "exp" / "T_00000_seed=0" / "checkpoint_000000" / "learner_group"))
    assert resolve_checkpoint(str(tmp_path / "exp" / "T_00001_seed=1"))[0].endswith("T_00001_seed=1/checkpoint_000000")


def test_runs_that_are_allowed_but_told_what_they_cost(tmp_path, capfd):
    """An action-repeat sweep under a stop in agent steps (unequal frames), a fragment of 1 on a remote env runner (a
    Ray call per env step), evaluation turned off from the command line beside the file's evaluation settings."""
    repeats = cfg("env_config: {time_limit: 1.0, action_repeat: {grid_search: [1, 2]}}").replace(
        "stop: {training_iteration: 2}", "stop: {env_runners/num_env_steps_sampled_lifetime: 200}"
    )
    path = tmp_path / "ok.yaml"
    for text, args, said in [
        (repeats, (), "the trials run action_repeat [1, 2] under a stop in agent steps (env_runners/num_env_steps_"
         "sampled_lifetime: 200): they see 200 vs 400 env frames"),
        (cfg("num_env_runners: 1", "rollout_fragment_length: 1"), (), "rollout_fragment_length=1 on remote env "
         "runners: one Ray round trip per 1 env step(s)"),
        (BASE, ("--config", '{"evaluation_interval": 0}'), ""),
        (cfg("evaluation_config: {explore: false, env_config: {grid_search: [{time_limit: 1.0}, {time_limit: 2.0}]}}"),
         (), "the trials differ only in evaluation_config.env_config.time_limit, which change how a run is evaluated"),
    ]:  # fmt: skip
        path.write_text(text)
        assert run_cli(["train", "file", str(path), *args, "--dry-run"]) == 0
        err = capfd.readouterr().err
        assert said in err and ("warning" in err) == bool(said), err
    # a setting that needs another (evaluation in parallel needs evaluation runners): the CPU advice skips it
    path.write_text(cfg("num_env_runners: 2", "evaluation_num_env_runners: 2", "evaluation_parallel_to_training: true"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "Traceback" not in capfd.readouterr().err


def test_tunes_older_checkpoint_score_attr_is_read_with_its_min_prefix(tmp_path, capfd):
    """``checkpoint_score_attr: min-<key>`` (Tune < 2.0) is the attribute and the order of today's checkpoint_config."""
    path = tmp_path / "old.yaml"
    path.write_text(exp("keep_checkpoints_num: 2", "checkpoint_score_attr: min-env_runners/episode_len_mean"))
    (spec,) = load_experiments(str(path))
    wanted = {"num_to_keep": 2, "checkpoint_score_attribute": "env_runners/episode_len_mean"}
    assert spec.checkpoint_config.items() >= {**wanted, "checkpoint_score_order": "min"}.items()
    assert "checkpoint_score_attr is Tune's older name; read as checkpoint_config.checkpoint_score_attribute" in (
        capfd.readouterr().err
    )


def test_an_evaluation_time_limit_is_measured_as_the_evaluation_episode(tmp_path, capfd):
    """``evaluation_config.env_config.time_limit: 50``: the evaluation episodes are 50x the training ones; the
    evaluation length is measured with the evaluation env's episode (a warning about the other task comes first). At
    10x the task's own episode or more, the time limit is taken for steps written as seconds."""
    path = tmp_path / "eval.yaml"
    path.write_text(cfg("evaluation_config: {explore: false, env_config: {time_limit: 50.0}}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    err = capfd.readouterr().err
    assert "evaluation_duration: 1 episodes = 5,000 env steps every 2 iteration(s) is more than 10x" in err, err
    path.write_text(cfg("evaluation_config: {explore: false, env_config: {time_limit: 100.0}}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert "env_config.time_limit=100.0 s is 10x the 10 s episode of dmc/cartpole-balance" in capfd.readouterr().err


def test_where_ray_and_wandb_write_is_checked_before_ray(tmp_path, capfd, monkeypatch, ray_never_starts):
    """RAY_TMPDIR (Ray's sessions and sockets) and WANDB_DIR (W&B's runs, honoured) that cannot be written: one line."""
    path = tmp_path / "t.yaml"
    path.write_text(BASE)
    monkeypatch.setenv("RAY_TMPDIR", "/proc/no_ray_here")
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert (
        "Ray's temp dir /proc/no_ray_here/ray (RAY_TMPDIR=/proc/no_ray_here) cannot be made or written"
        in capfd.readouterr().err
    )
    monkeypatch.setenv("RAY_TMPDIR", "/tmp/" + "r" * 60)
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert "is too long for its sockets" in capfd.readouterr().err
    monkeypatch.delenv("RAY_TMPDIR")
    monkeypatch.setenv("WANDB_DIR", "/proc/no_wandb_here")
    monkeypatch.setenv("WANDB_MODE", "offline")  # disabled (the suite's) writes nothing: not checked
    assert run_cli(["train", "file", str(path), "--wandb", "--dry-run"]) == 2
    assert "WANDB_DIR=/proc/no_wandb_here cannot be made or written" in capfd.readouterr().err
    _dry_run(tmp_path, capfd, BASE)  # W&B off: WANDB_DIR is not W&B's concern


def test_a_module_env_id_of_a_file_here_names_pythonpath_and_runs_with_it(tmp_path, capfd, monkeypatch):
    """gymnasium's ``module:EnvId`` with the module a file of the current directory: the fix (PYTHONPATH), and with it
    the env is registered by the import and the dry run passes; a module that registers no such id says so."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_test_envs.py").write_text(
        "import gymnasium\ngymnasium.register(id='MyTestPendulum-v0', "
        "entry_point='gymnasium.envs.classic_control.pendulum:PendulumEnv', max_episode_steps=100)\n"
    )
    text = exp("env: my_test_envs:MyTestPendulum-v0").replace("env_config: {time_limit: 1.0}", "env_config: {}")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    err = capfd.readouterr().err
    assert "imports my_test_envs, which is ./my_test_envs.py in this directory" in err and "PYTHONPATH=" in err, err
    monkeypatch.syspath_prepend(str(tmp_path))
    _dry_run(tmp_path, capfd, text)
    path.write_text(text.replace("MyTestPendulum-v0", "MyOtherPendulum-v0"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert "importing my_test_envs registers no env 'MyOtherPendulum-v0'" in capfd.readouterr().err


def test_json_schema_annotations_at_the_top_are_for_the_editor(tmp_path, capfd):
    import json

    import yaml

    doc = {"$schema": "https://example.invalid/rllib.json", "$comment": "editor only", **yaml.safe_load(BASE)}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    code = run_cli(["train", "file", str(path), "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0 and "tiny: SMAC on dmc/cartpole-balance, 1 trial(s)" in out, err


def test_a_target_entropy_far_below_minus_the_action_dimension_warns(tmp_path, capfd):
    """target_entropy -6 (cheetah's -|A|) on cartpole (|A| = 1): runnable, so a warning before Ray, not a refusal;
    -2 (twice the usual) passes without one."""
    for target, warned in ((-6, True), (-2, False)):
        path = tmp_path / "t.yaml"
        path.write_text(cfg(f"target_entropy: {target}"))
        code = run_cli(["train", "file", str(path), "--dry-run"])
        err = capfd.readouterr().err
        assert code == 0, err
        says = (
            f"target_entropy: {target} is far below -|A| = -1, the usual target for dmc/cartpole-balance's 1-D action"
        )
        assert (says in err) == warned, err


def test_files_that_are_not_an_experiment_file_name_what_to_do(tmp_path, capfd, ray_never_starts):
    """A Python script given as the file, and ``file.yaml:experiment`` (a selection other tools have)."""
    (tmp_path / "train.py").write_text("from smac_rllib.algorithms import SMACConfig\n")
    assert run_cli(["train", "file", str(tmp_path / "train.py"), "--dry-run"]) == 2
    assert "train.py is a Python script: rllib train file reads a YAML (or JSON)" in capfd.readouterr().err
    (tmp_path / "two.yaml").write_text(BASE)
    assert run_cli(["train", "file", f"{tmp_path / 'two.yaml'}:tiny", "--dry-run"]) == 2
    err = capfd.readouterr().err
    assert "two.yaml exists, and rllib train file runs every experiment in it (no ':tiny' selection)" in err, err


def test_an_experiment_name_with_spaces_is_a_directory_like_any_other(tmp_path, capfd):
    out = _dry_run(tmp_path, capfd, BASE.replace("\ntiny:\n", "\nsmac quick test:\n"))
    assert "smac quick test: SMAC on dmc/cartpole-balance, 1 trial(s)" in out
    path = tmp_path / "slash.yaml"
    path.write_text(BASE.replace("\ntiny:\n", "\na/b:\n"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert "experiment name 'a/b' names a directory: no '/'" in capfd.readouterr().err


def test_an_evaluation_that_ends_no_episode_names_the_timeout():
    """Evaluations cut by evaluation_sample_timeout_s report no episode metrics: the overdue line names the cause."""
    from smac_rllib.cli.overdue import overdue_message
    from smac_rllib.cli.results import EVAL_MARKER

    result = {
        "training_iteration": 2,
        "evaluation": {"env_runners": {}},
        "config": {"evaluation_sample_timeout_s": 0.5},
    }
    section, _, leaf = EVAL_MARKER.rpartition("/")
    node = result
    for part in section.split("/"):
        node = node.setdefault(part, {})
    node[leaf] = 1
    message = overdue_message("evaluation/env_runners/episode_return_mean", "stop criterion", result, 2)
    assert "no evaluation episode ended: evaluation_sample_timeout_s=0.5 s cuts each evaluation" in message
    result["config"] = {}
    assert "evaluation_duration_unit: episodes" in overdue_message(
        "evaluation/env_runners/episode_return_mean", "stop criterion", result, 2
    )


def test_asha_without_a_metric_says_its_default_and_its_max_t_may_be_the_stop(tmp_path, capfd):
    """ASHA with no metric ranks on the return (said in a note); ASHA's max_t alone ends every trial (no stop:)."""
    path = tmp_path / "a.yaml"
    path.write_text(
        exp("scheduler: {type: ASHA, max_t: 2, grace_period: 1}").replace("  stop: {training_iteration: 2}\n", "")
    )
    code = run_cli(["train", "file", str(path), "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "stop {'training_iteration': 2}" in out, out
    assert "ASHA ranks the trials on evaluation/env_runners/episode_return_mean (max), the default" in err, err


def test_a_scheduler_by_name_and_wandbs_older_dryrun_mode_run(tmp_path, capfd, monkeypatch):
    """``scheduler: FIFO`` (Tune takes a scheduler by name) is the default scheduler; ``WANDB_MODE=dryrun`` (W&B's older
    name for offline) is read as offline, as Ray's W&B callback knows only "offline"."""
    out = _dry_run(tmp_path, capfd, exp("scheduler: FIFO"))
    assert "tiny: SMAC on dmc/cartpole-balance, 1 trial(s)" in out
    from smac_rllib.cli import main as cli_main, wandb_key

    monkeypatch.setenv("WANDB_MODE", "dryrun")
    assert wandb_key.requested_mode({}) == "offline"
    cli_main.prepare_environment()
    assert os.environ["WANDB_MODE"] == "offline"


def test_a_dated_experiment_name_and_tunes_log_to_file_run(tmp_path, capfd):
    """A top-level key YAML 1.1 reads as a date (``2026-11-29:``) is the experiment's name as written; Tune's
    ``log_to_file`` (true, a file name, or [stdout, stderr]) goes to the run config."""
    out = _dry_run(tmp_path, capfd, BASE.replace("tiny:", "2026-11-29:"))
    assert "2026-11-29: SMAC on dmc/cartpole-balance, 1 trial(s)" in out, out
    path = tmp_path / "logs.yaml"
    for value, read in [("true", True), ("trial.log", "trial.log"), ("[out.log, err.log]", ("out.log", "err.log"))]:
        path.write_text(exp(f"log_to_file: {value}"))
        (spec,) = load_experiments(str(path))
        assert spec.log_to_file == read


def test_settings_that_only_the_run_can_contradict_are_said(tmp_path, capfd):
    """A checkpoint cadence past the file's own stop (frequency meant in env steps?) is said, not under a shorter
    --stop; ASHA's first rung in seconds is projected at the measured pace against a stop in iterations or steps, and
    a stop in seconds against the first evaluation."""
    from smac_rllib.cli.tune_horizon import seconds_rung_past_stop, time_stop_before_evaluation

    path = tmp_path / "cadence.yaml"
    path.write_text(exp("checkpoint_config: {checkpoint_frequency: 1000, checkpoint_at_end: true}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    said = "checkpoint_frequency: 1000 counts iterations, and the stop ends the run by iteration 2: only the end"
    assert said in capfd.readouterr().err
    assert run_cli(["train", "file", str(path), "--stop", '{"training_iteration": 3}', "--dry-run"]) == 0
    assert "counts iterations" not in capfd.readouterr().err
    asha = {"time_attr": "time_total_s", "grace_period": 600}
    result = {"training_iteration": 2, "time_total_s": 40.0}
    said = seconds_rung_past_stop(asha, {"training_iteration": 3}, result)
    assert said and "at 20.0 s per iteration the stop (training_iteration: 3) comes at ~60 s" in said, said
    steps = {**result, "env_runners": {"num_env_steps_sampled_lifetime": 2000}}
    assert "comes at ~60 s" in seconds_rung_past_stop(asha, {"env_runners/num_env_steps_sampled_lifetime": 3000}, steps)
    assert seconds_rung_past_stop(asha, {"training_iteration": 100}, result) is None  # ~2000 s: the rung is reached
    assert seconds_rung_past_stop(asha, {"training_iteration": 3}, {**result, "training_iteration": 1}) is None
    assert seconds_rung_past_stop({"grace_period": 600}, {"training_iteration": 3}, result) is None  # in iterations
    evaluating = {"training_iteration": 2, "time_total_s": 1.32, "config": {"evaluation_interval": 50}}
    said = time_stop_before_evaluation({"time_total_s": 20}, evaluating)
    assert (
        said
        and "evaluation_interval=50, but at 0.66 s per iteration the stop (time_total_s: 20) comes at ~iteration"
        " 30: no evaluation will run; lower evaluation_interval below 30, or raise time_total_s past ~40"
        in said
    ), said
    assert time_stop_before_evaluation({"time_total_s": 40}, evaluating) is None  # ~60 iterations: it evaluates
    assert time_stop_before_evaluation({"training_iteration": 10}, evaluating) is None  # rule 4 before Ray
    assert time_stop_before_evaluation({"time_total_s": 20}, {**evaluating, "training_iteration": 1}) is None


def test_what_the_command_line_replaces_and_other_evaluations_are_said(tmp_path, capfd, monkeypatch):
    """--storage-path over the file's storage_path is said (documented, not silent); an evaluation env with other
    keyword arguments of a gymnasium env warns (another reward); Tune's TUNE_MAX_PENDING_TRIALS_PG=0 is one line."""
    path = tmp_path / "ok.yaml"
    path.write_text(exp(f"storage_path: {tmp_path / 'a'}"))
    assert run_cli(["train", "file", str(path), "--storage-path", str(tmp_path / "b"), "--dry-run"]) == 0
    assert f"--storage-path {tmp_path / 'b'} replaces the file's {tmp_path / 'a'}" in capfd.readouterr().err
    gym = exp("env: Pendulum-v1").replace("{time_limit: 1.0}", "{g: 10.0}")
    path.write_text(gym.replace("evaluation_config: {explore: false}", "evaluation_config: {env_config: {g: 3.0}}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "evaluation_config runs g=3.0 (training: 10.0): the policy is evaluated on another task" in (
        capfd.readouterr().err
    )
    path.write_text(exp("checkpoint_config: {checkpoint_frequency: 0, checkpoint_at_end: false}"))
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 0
    assert "checkpoint_frequency: 0 and checkpoint_at_end: false save no checkpoint" in capfd.readouterr().err
    monkeypatch.setenv("TUNE_MAX_PENDING_TRIALS_PG", "0")
    path.write_text(BASE)
    assert run_cli(["train", "file", str(path), "--dry-run"]) == 2
    assert "TUNE_MAX_PENDING_TRIALS_PG=0: Tune takes a whole number >= 1 here" in capfd.readouterr().err


def test_a_long_evaluation_prints_its_progress(capsys, monkeypatch):
    """``rllib evaluate --episodes 1000``: a line of episodes done, mean return and time left every 15 s."""
    from smac_rllib.cli import evaluate_callbacks

    class Episode:
        def get_return(self):
            return 2.0

    clock = iter([0.0, 20.0, 21.0])  # the start, the first episode's end, the second's
    monkeypatch.setattr(evaluate_callbacks.time, "time", lambda: next(clock))
    progress = evaluate_callbacks.Progress(4)
    progress.on_episode_end(episode=Episode())
    progress.on_episode_end(episode=Episode())  # 1 s later: no line
    out = capsys.readouterr().out
    assert "1/4 episodes, return mean 2, 20s, ~1m00s left" in out and out.count("episodes") == 1, out
