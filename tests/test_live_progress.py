"""Progress inside long iterations: the trainable's live file and the CLI's line with an ETA."""

from __future__ import annotations

import json
import os


from smac_rllib.training.off_policy import LIVE_PROGRESS_FILE, LiveProgress
from smac_rllib.cli.live import LiveWatcher, eta_to_stop, format_live


def test_live_progress_writes_after_the_period_and_counts_the_iterations_updates(tmp_path, monkeypatch):
    monkeypatch.setenv("SMAC_LIVE_PROGRESS_S", "0")
    live = LiveProgress(str(tmp_path))
    live.start_iteration(3)
    live.maybe_write(updates_lifetime=100, planned_lifetime=300, env_steps=5000)  # the iteration's first call: base
    live.maybe_write(updates_lifetime=150, planned_lifetime=300, env_steps=5000)
    record = json.loads((tmp_path / LIVE_PROGRESS_FILE).read_text())
    assert record["training_iteration"] == 3 and record["updates_done"] == 50 and record["updates_planned"] == 200
    assert record["env_steps_stored"] == 5000 and record["s_per_update"] > 0
    assert not os.path.exists(str(tmp_path / LIVE_PROGRESS_FILE) + ".tmp")


def test_live_progress_waits_for_the_period(tmp_path, monkeypatch):
    monkeypatch.setenv("SMAC_LIVE_PROGRESS_S", "3600")
    live = LiveProgress(str(tmp_path))
    live.start_iteration(1)
    live.maybe_write(updates_lifetime=0, planned_lifetime=10, env_steps=1)
    live.maybe_write(updates_lifetime=5, planned_lifetime=10, env_steps=1)
    assert not (tmp_path / LIVE_PROGRESS_FILE).exists()


def test_eta_from_the_projected_iteration_length():
    # 50 of 200 updates in 100 s: the iteration lasts 400 s, 300 s are left; 1000 steps per iteration
    record = {
        "training_iteration": 3,
        "elapsed_s": 100.0,
        "updates_done": 50,
        "updates_planned": 200,
        "env_steps_stored": 3000,
        "s_per_update": 2.0,
    }
    last = {"training_iteration": 2, "env_runners": {"num_env_steps_sampled_lifetime": 2000}, "time_total_s": 500.0}
    assert eta_to_stop(record, {"num_env_steps_sampled_lifetime": 5000}, last) == "18m20s"  # 300 s + 2 x 400 s
    assert eta_to_stop(record, {"training_iteration": 4}, last) == "11m40s"  # 300 s + 1 x 400 s
    assert eta_to_stop(record, {"time_total_s": 1000}, last) == "6m40s"  # 1000 - 500 - 100
    line = format_live("smac-0", record, {"training_iteration": 4}, last)
    assert line == "[smac-0] it   3 running 1m40s, 50/200 updates, 2.00 s/update, 3,000 steps stored, stop in ~11m40s"


class _Trial:
    def __init__(self, path, trial_id="t0", status="RUNNING"):
        self.local_path, self.trial_id, self.status = path, trial_id, status


def test_watcher_prints_each_new_record_once_and_not_after_the_iteration_reported(tmp_path):
    record = {
        "time": 1.0,
        "training_iteration": 2,
        "elapsed_s": 40.0,
        "updates_done": 10,
        "updates_planned": 40,
        "env_steps_stored": 10,
    }
    (tmp_path / LIVE_PROGRESS_FILE).write_text(json.dumps(record))
    watcher = LiveWatcher(every_s=0)
    trials = [_Trial(str(tmp_path))]
    assert len(watcher.new_lines(trials, lambda t: "x", {}, {})) == 1
    assert watcher.new_lines(trials, lambda t: "x", {}, {}) == []  # same record
    (tmp_path / LIVE_PROGRESS_FILE).write_text(json.dumps(record | {"time": 2.0}))
    assert watcher.new_lines(trials, lambda t: "x", {}, {"t0": {"training_iteration": 2}}) == []  # already reported
    assert watcher.new_lines([_Trial(str(tmp_path), status="TERMINATED")], lambda t: "x", {}, {}) == []


def test_a_trial_whose_steps_and_updates_stand_still_is_said_stalled(tmp_path):
    """Records 30 s apart with the same env steps stored and updates done: after ``STALL_S`` the line says so
    instead of an ever-growing time to the stop."""
    record = {"time": 0.0, "training_iteration": 2, "elapsed_s": 30.0, "env_steps_stored": 290, "updates_done": 0}
    watcher, trials = LiveWatcher(every_s=0), [_Trial(str(tmp_path))]
    lines = []
    for t in range(10, 191, 30):
        (tmp_path / LIVE_PROGRESS_FILE).write_text(json.dumps(record | {"time": float(t), "elapsed_s": 30.0 + t}))
        lines += watcher.new_lines(trials, lambda t: "0", {"env_runners/num_env_steps_sampled_lifetime": 1000}, {})
    assert ["(stalled?" in line for line in lines] == [False] * 5 + [True] * 2, lines
    assert "no env step stored and no update for 2m30s" in lines[5]
    (tmp_path / LIVE_PROGRESS_FILE).write_text(json.dumps(record | {"time": 220.0, "env_steps_stored": 300}))
    assert "stalled" not in watcher.new_lines(trials, lambda t: "0", {}, {})[0], "moving again"


def test_a_long_iteration_prints_progress_lines_through_the_cli(tmp_path):
    """A real run whose iteration lasts seconds (300 env steps at 2 updates each, width 128) prints in-iteration
    lines with updates done/planned and the time to the stop criterion; nothing reaches stderr (no Ray/Tune warning
    or error line on a normal run; with W&B on: test_reliability's resumed run)."""
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).parent / "data" / "tiny.yaml").read_text()
    for old, new in (
        ("updates_per_env_step: 0.05", "updates_per_env_step: 2.0"),
        ("hidden_dim: 16", "hidden_dim: 128"),
        ("min_sample_timesteps_per_iteration: 100", "min_sample_timesteps_per_iteration: 300"),
        ("training_iteration: 3", "training_iteration: 1"),
        ("evaluation_interval: 2", "evaluation_interval: 1"),  # an evaluation the 1-iteration stop reaches
    ):
        assert old in text
        text = text.replace(old, new)
    (tmp_path / "slow.yaml").write_text(text)
    # A record every 0.2 s (Tune's loop calls the watcher every ~0.1 s): the iteration lasts 2 s on a fast machine
    # (260 updates/s), ~10 records; a 1 s period gave one line there, so the count no longer rests on the speed.
    env = dict(os.environ, SMAC_LIVE_PROGRESS_S="0.2", MUJOCO_GL="egl", RAY_AUTH_MODE="disabled")
    rllib = str(Path(sys.executable).parent / "rllib")
    out = subprocess.run(
        [
            rllib,
            "train",
            "file",
            str(tmp_path / "slow.yaml"),
            "--storage-path",
            str(tmp_path / "runs"),
            "--no-plot",
            "--no-wandb",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    live = [line for line in out.stdout.splitlines() if " running " in line]
    assert len(live) >= 2, out.stdout
    assert all("updates" in line and "stop in ~" in line for line in live), live
    foreign = [line for line in out.stderr.splitlines() if line.strip() and not line.startswith("rllib: ")]
    assert foreign == [], out.stderr[-2000:]  # our own notes ("rllib: note: ...") only, nothing from Ray or Tune


def test_an_evaluation_record_says_episodes_done_and_the_time_left(tmp_path, monkeypatch):
    monkeypatch.setenv("SMAC_LIVE_PROGRESS_S", "0")
    live = LiveProgress(str(tmp_path))
    live.start_iteration(10)
    live.maybe_write_evaluation(episodes_done=4, episodes_planned=10, started=0.0)
    record = json.loads((tmp_path / LIVE_PROGRESS_FILE).read_text())
    assert record["phase"] == "evaluation" and record["training_iteration"] == 10 and record["episodes_done"] == 4
    record["elapsed_s"] = 120.0
    assert format_live("0", record, {}, None) == "[0] it  10 evaluating 2m00s, 4/10 episodes, ~3m00s left"
