"""The `rllib` command line: tuned examples, real runs through the console script, resume, sweeps, mistakes.

Real Ray, real dm_control, tiny sizes: tests/data/tiny.yaml is state SMAC on cartpole-balance with 100-step
episodes and 16-unit nets (100 env steps per iteration). The console script runs in subprocesses (as users
run it); evaluate, plot and the mistakes run in-process through ``main()`` to save interpreter start-ups,
plus one subprocess mistake to prove that nothing else reaches stderr. The killed-and-resumed grid run (checkpoints,
--resume, W&B offline, evaluate with video, plot) is tests/test_reliability.py's one real run.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import pickle
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.main import main

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny.yaml"
TUNED_EXAMPLES = sorted((REPO / "tuned_examples").glob("*.yaml"))
RLLIB = str(Path(sys.executable).parent / "rllib")
# The real runs here (Ctrl-C and --resume, the pixel example) are slow only on a loaded machine: generous limits so
# a loaded CI machine is slow, not red.
pytestmark = pytest.mark.timeout(1800)


def _cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}  # the CLI picks offline itself
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


def _rllib(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RLLIB, *args], capture_output=True, text=True, timeout=timeout, env=_cli_env(**env), cwd=REPO
    )


def _results(trial_dir: str) -> list[dict]:
    with open(os.path.join(trial_dir, "result.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _steps(row: dict) -> float:
    return row["env_runners"]["num_env_steps_sampled_lifetime"]


# --------------------------------------------------------------------------------------------- tuned examples


def test_console_script_is_installed():
    assert os.access(RLLIB, os.X_OK), "pip install -e . installs the `rllib` console script"


@pytest.mark.parametrize("path", TUNED_EXAMPLES, ids=lambda p: p.name)
def test_tuned_example_parses_and_builds_a_config(path):
    import gymnasium as gym

    import smac_rllib
    from smac_rllib.cli.yaml_loader import load_experiments

    smac_rllib.register()
    text = path.read_text()
    assert text.startswith("#"), "each tuned example starts with a comment: what it reproduces, how long it takes"
    specs = load_experiments(str(path))
    assert specs
    for spec in specs:
        assert spec.stop and spec.configs and spec.num_trials >= 1
        for config in spec.configs:  # validated AlgorithmConfig of every grid point
            assert config.env.startswith("dmc/") or config.env in gym.registry  # a DMC task or a gymnasium id


def test_sweep_example_is_k_times_latent_dim_times_seeds():
    from smac_rllib.cli.yaml_loader import load_experiments

    (spec,) = load_experiments(str(REPO / "tuned_examples" / "smac_sweep_k_latent.yaml"))
    assert spec.num_trials == 27
    points = {(c.num_particles, c.latent_dim, c.seed) for c in spec.configs}
    assert points == {(k, d, s) for k in (8, 16, 32) for d in (8, 16, 32) for s in (0, 1, 2)}
    # its commented-out ASHA block works when enabled
    block = "\n".join(
        line.replace("  # ", "  ", 1)
        for line in (REPO / "tuned_examples" / "smac_sweep_k_latent.yaml").read_text().splitlines()
        if line.startswith("  # ") and ":" in line and not line.startswith("  # To")
    )
    assert "type: ASHA" in block


def test_asha_scheduler_block(tmp_path):
    from ray.tune.schedulers import ASHAScheduler

    from smac_rllib.cli.train import build_scheduler
    from smac_rllib.cli.experiment_parts import parse_scheduler

    block = parse_scheduler({"type": "ASHA", "max_t": 100, "grace_period": 10, "reduction_factor": 3}, "x.yaml")
    assert isinstance(build_scheduler(block), ASHAScheduler)
    assert parse_scheduler({"type": "FIFO"}, "x.yaml") is None
    with pytest.raises(UserError, match="did you mean 'grace_period'"):
        parse_scheduler({"type": "ASHA", "grace_periods": 10}, "x.yaml")


def test_gpu_request_without_gpu_falls_back_to_cpu_or_fails_when_strict(capsys):
    from smac_rllib.cli import resources
    from smac_rllib.cli.yaml_loader import load_experiments

    path = str(REPO / "tuned_examples" / "smac_pixels.yaml")
    with pytest.raises(UserError, match="asks for 1 GPU"):
        resources.fit_experiments(load_experiments(path), strict=True, gpus=0)
    specs = load_experiments(path) + load_experiments(str(REPO / "tuned_examples" / "latent_sac_pixels.yaml"))
    resources.fit_experiments(specs, strict=False, gpus=0)
    assert capsys.readouterr().err.count("warning") == 1, "warns once, not per experiment"
    for spec in specs:
        assert resources.trial_request(spec)["GPU"] == 0
        assert all(c.num_gpus_per_learner == 0 for c in spec.configs)


def test_paper_size_pixel_runs_on_a_cpu_learner_get_one_warning_with_the_hours(capsys):
    """SMAC's and SLAC's paper-size examples without a GPU: hours per 10k frames from the measured CPU costs."""
    from smac_rllib.cli import resources
    from smac_rllib.cli.yaml_loader import load_experiments

    for name, hint in (("smac_pixels.yaml", "smac_pixels_quick.yaml"), ("slac_pixels.yaml", "slac_tiny.yaml")):
        specs = load_experiments(str(REPO / "tuned_examples" / name))
        resources.fit_experiments(specs, strict=False, gpus=0)
        capsys.readouterr()
        hours = resources.cpu_pixel_hours_per_10k_frames(specs[0].configs[0])
        assert hours is not None and hours > 1.0, (name, hours)
        resources.warn_impractical(specs)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"about {hours:.0f} h per 10k frames" in err[0] and hint in err[0], err
    slac = specs[0].configs[0]  # slac_pixels.yaml, its GPU request dropped by fit_experiments above
    # 2500 updates per 10k frames at action repeat 4, 5.6 s each at the original's sizes
    assert resources.cpu_pixel_hours_per_10k_frames(slac) == pytest.approx(2500 * 5.6 / 3600)
    tiny = load_experiments(str(REPO / "tests" / "data" / "slac_tiny.yaml"))[0].configs[0]
    assert resources.cpu_pixel_hours_per_10k_frames(tiny) < 1.0, "the test preset is not warned about"


def test_yaml_floats_merge_keys_and_duplicates(tmp_path):
    from smac_rllib.cli.yaml_reader import read_yaml

    path = tmp_path / "x.yaml"
    path.write_text("a: &base {lr: 3e-4, n: 1e3}\nb:\n  <<: *base\n  n: 5\n")
    doc = read_yaml(str(path))
    assert doc["a"]["lr"] == 3e-4 and isinstance(doc["a"]["n"], float)  # YAML 1.1 would give the string '3e-4'
    assert doc["b"] == {"lr": 3e-4, "n": 5}
    path.write_text("a:\n  x: 1\n  x: 2\n")
    with pytest.raises(UserError, match=r"x.yaml:3:3: .*duplicate key 'x' \(first on line 2\)"):
        read_yaml(str(path))


# --------------------------------------------------------------------------------------------- user mistakes


def _tiny_with(tmp_path, old: str, new: str) -> str:
    text = TINY.read_text()
    assert old in text
    path = tmp_path / "mistake.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


MISTAKES = {
    # name: (how to make the file or args, what the one line must say)
    "missing file": (
        lambda tmp: ["train", "file", "tuned_examples/smac_stat.yaml"],
        "no such file: tuned_examples/smac_stat.yaml; did you mean tuned_examples/smac_state.yaml?",
    ),
    "yaml syntax error": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "    seed: 0\n", "   seed: 0\n")],
        "mistake.yaml:14:4: YAML syntax error: this line's indentation does not match the lines above it",
    ),
    "unknown run": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "run: SMAC", "run: SMACK")],
        "unknown run 'SMACK'; did you mean 'SMAC'?",
    ),
    "unknown env": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "dmc/cartpole-balance", "dmc/cartpole-balanse")],
        "unknown env 'dmc/cartpole-balanse'; did you mean dmc/cartpole-balance",
    ),
    "unknown config key": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "latent_dim: 4", "latent_dims: 4")],
        "mistake.yaml:22: unknown config key 'latent_dims' for SMAC; did you mean 'latent_dim'?",
    ),
    "unknown env_config key": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "time_limit: 1.0", "time_limt: 1.0")],
        "unknown env_config key 'time_limt'; did you mean 'time_limit'?",
    ),
    "wrong value type": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "latent_dim: 4", 'latent_dim: "four"')],
        "latent_dim='four' has the wrong type: expected an integer",
    ),
    "K not a power of two": (
        lambda tmp: ["train", "file", _tiny_with(tmp, "num_particles: 4", "num_particles: 6")],
        "mistake.yaml:21: num_particles=6 must be 0 or a power of two for estimator='mlmc' (try 4 or 8)",
    ),
    "bad --config JSON": (
        lambda tmp: ["train", "file", str(TINY), "--config", "{num_particles: 8}"],
        "--config is not valid JSON",
    ),
    "wrong type in --config": (
        lambda tmp: ["train", "file", str(TINY), "--config", '{"num_particles": "8"}'],
        "num_particles='8' has the wrong type",
    ),
    "bad option": (
        lambda tmp: ["train", "file", str(TINY), "--num-sample", "2"],
        "rllib train file has no --num-sample; did you mean --num-samples?",
    ),
    "evaluate without a checkpoint": (lambda tmp: ["evaluate", str(tmp)], "no checkpoint under"),
}


@pytest.mark.parametrize("name", list(MISTAKES))
def test_user_mistake_is_one_line_and_exit_code_2(name, tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(REPO)
    make_args, expected = MISTAKES[name]
    argv = make_args(tmp_path)
    if argv[0] == "train":
        argv += ["--dry-run"]  # all checks, never a run (if a mistake slipped through)
    try:
        code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code
    out, err = capfd.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rllib: error: ") and expected in lines[0], lines[0]
    print(f"{name}: {lines[0]}")


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a GPU is there to use")
def test_strict_resources_fails_fast_without_gpu(capfd):
    code = main(
        [
            "train",
            "file",
            str(TINY),
            "--config",
            '{"num_gpus_per_learner": 1}',
            "--strict-resources",
            "--storage-path",
            "/nonexistent",
        ]
    )
    err = capfd.readouterr().err.strip().splitlines()
    assert (
        code == 2
        and len(err) == 1
        and "asks for 1 GPU(s) per trial (num_gpus_per_learner=1) but 0 are available" in err[0]
    )


def test_console_script_mistake_prints_exactly_one_stderr_line(tmp_path):
    """Through the real console script: importing Ray/RLlib must not add anything to stderr."""
    path = _tiny_with(tmp_path, "latent_dim: 4", "latent_dimm: 4")
    proc = _rllib("train", "file", path, "--storage-path", str(tmp_path), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"rllib: error: {tmp_path}/mistake.yaml:22: unknown config key 'latent_dimm' for SMAC; did you mean "
        "'latent_dim'? (see SMACConfig; all keys: SMACConfig().to_dict())"
    ]
    assert "Traceback" not in proc.stdout


def test_a_gl_backend_dm_control_cannot_load_is_one_line(tmp_path):
    """MUJOCO_GL picks dm_control's renderer when it is first imported (every run imports it): an unknown name fails
    there, before any file is read."""
    proc = _rllib("train", "file", TINY, "--dry-run", timeout=120, MUJOCO_GL="glx")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("rllib: error: MUJOCO_GL=glx (PYOPENGL_PLATFORM=") and "unset both" in proc.stderr


# --------------------------------------------------------------------------------------------- Ctrl-C


def test_first_ctrl_c_checkpoints_running_trials_then_ends_the_loop_second_stops_at_once(monkeypatch, capfd):
    from types import SimpleNamespace

    from ray.tune.experiment import Trial

    from smac_rllib.cli import interrupt

    ended = []
    monkeypatch.setattr(interrupt, "_end_tune_loop", lambda: ended.append(True))
    monkeypatch.setenv("TUNE_DISABLE_SIGINT_HANDLER", "0")
    a, b, c = (
        SimpleNamespace(trial_id=i, path=f"/r/{i}", status=s)
        for i, s in [("a", Trial.RUNNING), ("b", Trial.RUNNING), ("c", Trial.PENDING)]
    )
    callback = interrupt.CheckpointOnInterrupt()
    with interrupt.catch_ctrl_c():
        assert os.environ["TUNE_DISABLE_SIGINT_HANDLER"] == "1", "Tune's handler would end the run without checkpoints"
        assert signal.getsignal(signal.SIGINT) is interrupt._on_sigint
        result = {"training_iteration": 3}
        callback.on_trial_result(0, [a, b, c], a, result)
        callback.on_step_end(0, [a, b, c])
        assert "should_checkpoint" not in result and not ended, "nothing happens before Ctrl-C"

        interrupt._on_sigint(signal.SIGINT, None)  # the first Ctrl-C
        assert "rllib: Ctrl-C: checkpointing every running trial" in capfd.readouterr().err
        callback.on_step_end(1, [a, b, c])  # a and b are running: wait for their checkpoints
        callback.on_trial_result(2, [a, b, c], a, result)
        assert result["should_checkpoint"] is True
        callback.on_checkpoint(2, [a, b, c], a, checkpoint=None)
        callback.on_step_end(2, [a, b, c])
        assert not ended, "b has no checkpoint yet"
        b.status = Trial.ERROR  # a failed trial is not waited for
        callback.on_step_end(3, [a, b, c])
        assert ended == [True] and interrupt.INTERRUPT.unfinished == {"/r/a", "/r/c"}  # left for --resume
        callback.on_step_end(4, [a, b, c])
        assert ended == [True], "the loop is ended once"

        with pytest.raises(KeyboardInterrupt):  # the second Ctrl-C
            interrupt._on_sigint(signal.SIGINT, None)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # a third one, too
    interrupt.INTERRUPT.reset()


def test_second_ctrl_c_exits_130_with_the_resume_command(monkeypatch, capfd):
    import smac_rllib.cli.train as train

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "run_train", interrupted)
    argv = [
        "train",
        "file",
        "tuned_examples/smac_state.yaml",
        "--config",
        '{"num_particles": 8}',
        "--storage-path",
        "/tmp/x y",
    ]
    assert main(argv) == 130
    err = capfd.readouterr().err.strip()
    assert err == (
        "rllib: interrupted; continue with: rllib train file tuned_examples/smac_state.yaml "
        "--config '{\"num_particles\": 8}' --storage-path '/tmp/x y' --resume"
    )


# --------------------------------------------------------------------------------------------- real runs


def _start(args: list[str], **env: str) -> tuple[subprocess.Popen, queue.Queue]:
    proc = subprocess.Popen(
        [RLLIB, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_cli_env(**env),
        cwd=REPO,
        start_new_session=True,  # its own process group: killing it takes the local Ray with it
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    return proc, lines


def _lines_until(proc: subprocess.Popen, lines: queue.Queue, deadline: float):
    """The output lines of ``proc`` as they come, until it exits (and its output is drained) or ``deadline``."""
    while time.time() < deadline:
        try:
            yield lines.get(timeout=1)
        except queue.Empty:
            if proc.poll() is not None:
                return


def _algorithm_state(checkpoint_dir: str) -> dict:
    with open(os.path.join(checkpoint_dir, "algorithm_state.pkl"), "rb") as f:
        return pickle.load(f)


def test_ctrl_c_checkpoints_the_running_trial_and_resume_continues_from_it(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) in a run without periodic checkpoints: the
    trial's iteration reached is checkpointed (replay buffer included), the summary says "interrupted" with the
    exact --resume command, exit 130; that command continues from the checkpoint and finishes with exit 0."""
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.read_text().replace("checkpoint_frequency: 1", "checkpoint_frequency: 0"))  # at end only
    storage = tmp_path / "results"
    args = [
        "train",
        "file",
        str(path),
        "--storage-path",
        str(storage),
        "--stop",
        '{"training_iteration": 5}',
        "--no-plot",
    ]
    proc, lines = _start(args)
    out, deadline, sent = [], time.time() + 420, False
    try:
        for line in _lines_until(proc, lines, deadline):
            out.append(line)
            if not sent and " it   1 | " in line:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: to the foreground process group
                sent = True
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(out)
    assert sent and code == 130, out
    assert "rllib: Ctrl-C: checkpointing every running trial" in out and "Traceback" not in out, out
    assert (
        "== cli-tiny: interrupted (Ctrl-C) after " in out and ": 1 trial(s), 0 finished, 0 failed, 1 interrupted" in out
    )
    assert "Tuner.restore" not in out, "Tune's own interrupt message is replaced by ours"

    (trial_dir,) = glob.glob(str(storage / "cli-tiny" / "SMAC_*"))
    reached = _results(trial_dir)[-1]["training_iteration"]
    assert 1 <= reached < 5
    (checkpoint,) = glob.glob(os.path.join(trial_dir, "checkpoint_*"))  # no periodic ones: Ctrl-C wrote it
    assert f"        checkpoint {checkpoint}\n" in out
    state = _algorithm_state(checkpoint)
    assert state["training_iteration"] == reached, "the checkpoint holds the iteration reached"
    assert state["replay_buffer"]["size"] == 100 * reached, "with the replay buffer"

    (resume_line,) = [line for line in out.splitlines() if line.startswith("Resume:      ")]
    command = shlex.split(resume_line.removeprefix("Resume:"), comments=True)
    assert command == ["rllib", *args, "--resume"], resume_line  # the user's command, plus --resume
    resumed = _rllib(*command[1:], timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "== cli-tiny: 1 trial(s), 1 finished, 0 failed" in resumed.stdout

    rows = _results(trial_dir)
    restart = next(i for i, r in enumerate(rows) if i > 0 and r["iterations_since_restore"] == 1)
    assert [r["training_iteration"] for r in rows[restart:]] == list(range(reached + 1, 6)), "continued, nothing lost"
    assert _steps(rows[restart]) == 100 * (reached + 1) and _steps(rows[-1]) == 500
    final = _algorithm_state(max(glob.glob(os.path.join(trial_dir, "checkpoint_*"))))
    assert final["training_iteration"] == 5
    assert final["replay_buffer"]["size"] == 500, "the replay buffer came back with the checkpoint"

    # the stop raised: the finished trial continues from its end checkpoint, it does not exit 0 untrained
    raised = [*args[: args.index("--stop") + 1], '{"training_iteration": 7}', *args[args.index("--stop") + 2 :]]
    again = _rllib(*raised, "--resume", timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "== cli-tiny: stop now training_iteration >= 7: 1 finished trial(s) continue" in again.stdout
    assert [r["training_iteration"] for r in _results(trial_dir)][-2:] == [6, 7]


def test_plot_mean_and_interval_over_seeds():
    import numpy as np

    from smac_rllib.cli.plot import group_trials, mean_and_interval

    trials = [
        {
            "algo": "SMAC",
            "env": "e",
            "params": {"num_particles": 8, "seed": s},
            "x": np.array([0.0, 10.0]),
            "y": np.array([0.0, y]),
        }
        for s, y in enumerate([8.0, 10.0, 12.0])
    ]
    (members,) = group_trials(trials).values()  # seeds share one line
    x, mean, low, high = mean_and_interval([(t["x"], t["y"]) for t in members], points=3)
    assert mean[-1] == pytest.approx(10.0)
    assert high[-1] - mean[-1] == pytest.approx(4.303 * 2.0 / 3**0.5, rel=1e-3)  # t(0.975, df=2) * sd / sqrt(n)


def test_rays_worker_pool_notice_stays_out_of_the_terminal_and_other_notices_pass(capsys, monkeypatch):
    """Ray's raylet notices reach the driver through ``print_to_stdstream``; the worker-pool warning is kept out
    (it stays in raylet.out), an out-of-memory notice still reaches the user."""
    import ray._private.worker as ray_worker

    from smac_rllib.cli.ray_output import quiet_ray_notices

    printed = []
    monkeypatch.setattr(ray_worker, "print_to_stdstream", lambda data, ignore_prefix: printed.append(data["lines"]))
    quiet_ray_notices()
    quiet_ray_notices()  # idempotent: one filter
    notice = (
        "WARNING: 6 PYTHON worker processes have been started on node: abc with address: 127.0.0.1. This could be "
        "a result of using a large number of actors, or due to tasks blocked in ray.get() calls"
    )
    ray_worker.print_to_stdstream({"lines": [notice], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    assert printed == []
    oom = "Task was killed due to the node running low on memory."
    ray_worker.print_to_stdstream({"lines": [notice, oom], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    assert printed == [[oom]]


def test_tunes_failed_copy_of_a_renamed_searcher_file_stays_out_and_other_copy_errors_pass(tmp_path):
    """Tune copies its staging dir to storage in a background thread while the searcher's state is written as
    ``.<uuid>-tmp-<name>`` and renamed: a copy that listed the temp file fails to open it (pyarrow's real error here)
    and Tune logs it with a traceback. That record is dropped; a missing ordinary file still reaches the user."""
    import uuid

    import pyarrow.fs

    from smac_rllib.cli.ray_output import StateCopyRaceFilter

    logger = logging.getLogger("ray.tune.execution.experiment_state")
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    StateCopyRaceFilter.install()
    StateCopyRaceFilter.install()  # idempotent: one filter
    assert sum(isinstance(f, StateCopyRaceFilter) for f in logger.filters) == 1
    renamed = tmp_path / f".{uuid.uuid4()}-tmp-basic-variant-state-2026-11-29_12-08-40.json"
    for missing, kept in ((renamed, False), (tmp_path / "experiment_state-2026.json", True)):
        records.clear()
        with pytest.raises(FileNotFoundError) as raised:
            pyarrow.fs.copy_files(str(missing), str(tmp_path / "storage" / missing.name))
        logger.error(
            "Saving experiment state to storage at '%s' failed with exception: ", tmp_path, exc_info=raised.value
        )
        assert bool(records) == kept, raised.value
    logger.removeHandler(handler)


def test_an_rllib_algorithm_name_is_resolved_without_rllibs_import_warnings():
    """``run: SAC`` makes Tune register all of RLlib's algorithms; one of them builds a gymnasium debug env at import
    (4 gymnasium warnings about no env of the user's). In a fresh process, as the CLI meets it."""
    code = "from smac_rllib.cli.checkpoints import trainable; print(trainable('SAC').__mro__[2].__name__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "SAC", proc.stderr[-2000:]
    assert "WARN" not in proc.stderr, proc.stderr[-2000:]


def test_the_pixel_quick_example_prints_only_our_lines(tmp_path):
    """`rllib train file tuned_examples/smac_pixels_quick.yaml` for 2 iterations (1,000 warm-up steps, the 2nd ending
    with the example's evaluation, here of 1 episode instead of 2): stderr empty, stdout only the CLI's own lines
    (no Ray, RLlib, gymnasium or torch warnings). The 2 iterations are the warm-up alone: ``warm_up_only: true``."""
    example = tmp_path / "smac_pixels_quick.yaml"
    text = (REPO / "tuned_examples" / "smac_pixels_quick.yaml").read_text()
    example.write_text(text.replace("  run: SMAC\n", "  run: SMAC\n  warm_up_only: true\n", 1))
    proc = subprocess.run(
        [
            RLLIB,
            "train",
            "file",
            str(example),
            "--stop",
            '{"training_iteration": 2}',
            "--config",
            '{"evaluation_duration": 1}',  # one 500-step pixel episode is the same evaluation path as two
            "--storage-path",
            str(tmp_path),
            "--no-plot",
            "--no-wandb",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stderr == "", proc.stderr
    ours = ("== ", "[0] ", "Results:", "Evaluate:", "Resume:", "        ", "")
    foreign = [line for line in proc.stdout.splitlines() if not line.startswith(ours)]
    assert foreign == [], foreign
    assert " it   2 | 1,000 steps | return eval " in proc.stdout, proc.stdout  # the evaluation ran


# --------------------------------------------------------------------------------------------- nothing waits in silence


def test_a_stop_key_that_never_comes_ends_the_run_with_one_line_and_exit_2(tmp_path):
    """``timers/...`` passes the check before Ray (an open prefix), but no result holds ``timers/no_such_timer``: the
    run stops after the two results that must hold it, with one stderr line, the summary, and exit 2. With Tune's
    ``log_to_file: true`` the trial's own output goes to ``stdout``/``stderr`` files in its directory."""
    path = tmp_path / "logged.yaml"
    path.write_text(TINY.read_text().replace("  max_failures: 0\n", "  max_failures: 0\n  log_to_file: true\n"))
    proc = _rllib(
        "train",
        "file",
        str(path),
        "--stop",
        '{"training_iteration": 50, "timers/no_such_timer": 1}',
        "--storage-path",
        str(tmp_path),
        "--no-plot",
        "--no-wandb",
        timeout=600,
    )
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stderr.startswith("rllib: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert (
        "stop criterion 'timers/no_such_timer' is in none of the trial's 2 results (up to iteration 2)" in proc.stderr
    )
    assert " it   2 | " in proc.stdout and " it   3 | " not in proc.stdout, proc.stdout
    assert (
        "== cli-tiny: 1 trial(s) ended early by a key no result reports (the error above), 0 failed" in proc.stdout
    ), proc.stdout
    (trial,) = (tmp_path / "cli-tiny").glob("SMAC_*")
    assert (trial / "stdout").is_file() and (trial / "stderr").is_file(), sorted(p.name for p in trial.iterdir())
