"""Reliability: atomic checkpoints, configuration errors not retried, the W&B key in no file, the local Ray on
loopback only, pickles only from their owner, ``--video`` checked first, ASHA rungs that see evaluations; and the
`rllib train` basics a real run shows: checkpoints, --resume, a grid, W&B offline, evaluate, plot.

One real run (tests/data/tiny.yaml through the console script as a 2-trial grid, with a fake W&B key): killed with
SIGKILL after a trial's 3rd checkpoint, that trial's newest checkpoint then made incomplete and a half-written
staging directory added, as a kill during a save leaves them; ``rllib evaluate`` and ``--resume`` must take the
complete checkpoint before it, and the resumed grid must finish with its counters, replay, summary, curves and W&B
runs. The rest runs in-process (the session's Ray for the failing trials, plain Python for the kill during a save).
"""

from __future__ import annotations

import glob
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from smac_rllib.cli.main import main
from tests.tune_state import snapshot_checkpoints, wait_until_snapshot_has

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny.yaml"
RLLIB = str(Path(sys.executable).parent / "rllib")
FAKE_KEY = "f4k3w4ndbk3y" + "0123456789abcdef" * 2  # 44 characters, like a W&B key; never real
STOP = 9  # iterations of the real run: the kill comes after a trial's 3rd, with room for the run going on until then
# The real run (train, SIGKILL, --resume) takes ~2 min on an idle 2-core machine and was seen taking > 7 min under
# heavy load: generous limits so a loaded CI machine is slow, not red.
pytestmark = pytest.mark.timeout(1800)


def _env(ray_tmp: str, sys_tmp: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "RAY_ENABLE_WINDOWS"))}
    env.update(
        WANDB_API_KEY=FAKE_KEY, WANDB_MODE="offline", RAY_TMPDIR=ray_tmp, TMPDIR=sys_tmp, PYTHONUNBUFFERED="1", **extra
    )
    return env


def _results(trial_dir: str) -> list[dict]:
    with open(os.path.join(trial_dir, "result.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _ray_pids(ray_tmp: str) -> set[int]:
    """The processes of the Ray under ``ray_tmp`` (GCS, raylet, workers: their command line or RAY_TMPDIR name it)."""
    import ray  # noqa: F401 - puts Ray's bundled psutil on sys.path
    import psutil

    pids = set()
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            environ = proc.info["environ"] or {}
        except (psutil.Error, TypeError):
            continue
        if ray_tmp in cmdline or environ.get("RAY_TMPDIR") == ray_tmp:
            pids.add(proc.pid)
    return pids


def _kill_all(ray_tmp: str, timeout_s: float = 30.0) -> None:
    """SIGKILL every process of that Ray and wait until none is left: a worker outside the CLI's process group
    could otherwise still finish a checkpoint after the test has looked at the trial dir."""
    deadline = time.time() + timeout_s
    while (pids := _ray_pids(ray_tmp)) and time.time() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _ray_listeners(ray_tmp: str) -> list[str]:
    """Local addresses that the processes of the Ray under ``ray_tmp`` listen on (TCP)."""
    pids = _ray_pids(ray_tmp)
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if any(int(p) in pids for p in re.findall(r"pid=(\d+)", line))]


def _files_containing(root: str, needle: bytes) -> list[str]:
    hits = []
    for path in glob.glob(os.path.join(root, "**", "*"), recursive=True) + glob.glob(
        os.path.join(root, "**", ".*"), recursive=True
    ):
        if os.path.isfile(path) and not os.path.islink(path):
            try:
                with open(path, "rb") as f:
                    if needle in f.read():
                        hits.append(path)
            except OSError:
                pass
    return hits


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The module's one real run: `rllib train file tiny.yaml --wandb` as a 2-trial grid (latent_dim 2 | 4) with a
    fake W&B key, Ray and the system temp dir in private directories; SIGKILL (its process group and every process
    of its Ray) as soon as Tune's experiment snapshot knows a trial's 3rd checkpoint; then that trial's newest
    checkpoint loses its completion marker and a half-written staging dir appears: what a kill during a save
    leaves. The fixture ``resumed`` continues it with --resume."""
    storage = tmp_path_factory.mktemp("reliability")
    ray_tmp = tempfile.mkdtemp(prefix="rr", dir="/tmp")  # short: Ray's socket paths live under it
    sys_tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    env = _env(ray_tmp, sys_tmp, TUNE_GLOBAL_CHECKPOINT_S="0.5")  # snapshot the experiment state often
    # Every checkpoint kept: the run goes on between the snapshot poll and the kill (more iterations on a loaded
    # machine), and with tiny.yaml's num_to_keep: 2 the snapshot's checkpoint could be deleted before the kill.
    keep_all = storage / "tiny_keep_all.yaml"
    keep_all.write_text(TINY.read_text().replace("num_to_keep: 2", "num_to_keep: 100"))
    args = [
        "train", "file", str(keep_all), "--storage-path", str(storage), "--wandb",
        "--config", '{"latent_dim": {"grid_search": [2, 4]}}', "--stop", f'{{"training_iteration": {STOP}}}',
    ]  # fmt: skip
    proc = subprocess.Popen(
        [RLLIB, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO,
        start_new_session=True,  # its own process group: killing it takes the CLI's local Ray with it
    )
    out, listeners, processes, checkpointed, started = [], [], "", None, 0
    try:
        deadline = time.time() + 420  # generous: CI machines can be loaded
        for line in proc.stdout:
            out.append(line)
            if " it   1 | " in line and not listeners:  # Ray is up, the trial and W&B's actor run
                listeners = _ray_listeners(ray_tmp)
                processes = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True).stdout
            started += "] started  " in line
            # "[0 latent_dim=2] checkpoint <trial dir>/checkpoint_000002", once both trials have started (on a loaded
            # machine the second may start after the first's 3rd checkpoint: then its own 3rd is the one)
            if "/checkpoint_000002" in line and started >= 2:
                checkpointed = (os.path.dirname(line.split()[-1]), time.time())
                break
            if time.time() > deadline:
                break
        assert checkpointed, "".join(out)
        known = wait_until_snapshot_has(storage / "cli-tiny", os.path.join(checkpointed[0], "checkpoint_000002"))
        assert known, ("Tune's snapshot never recorded the 3rd checkpoint", "".join(out))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        _kill_all(ray_tmp)
    trial_dir = checkpointed[0]
    left_in_tmp = glob.glob(os.path.join(sys_tmp, "**", "rllib_checkpoint.json"), recursive=True)
    all_killed_rows = {
        d: _results(d)
        for d in glob.glob(str(storage / "cli-tiny" / "SMAC_*"))
        if os.path.exists(os.path.join(d, "result.json"))
    }

    # The run may have gone on past checkpoint_000002 before the kill (iterations take ~0.5 s), and Tune's experiment
    # snapshot may not know the newest checkpoints on disk yet (all are kept: keep_all above). `--resume` starts from
    # the snapshot's checkpoint: that one loses its marker, and so does every newer one, so the newest complete
    # checkpoint is older than it (checkpoint_000001 or later: iteration >= 2, after the warm-up, updates counted).
    from smac_rllib.cli.checkpoints import incomplete_reason

    (newest,) = [c for c in snapshot_checkpoints(storage / "cli-tiny") if os.path.dirname(c) == trial_dir]
    on_disk = sorted(os.path.normpath(c) for c in glob.glob(os.path.join(trial_dir, "checkpoint_0*")))
    older = [c for c in on_disk if c < newest and incomplete_reason(c) is None]
    assert older and newest in on_disk, (newest, on_disk, "".join(out))
    previous = older[-1]
    for damaged in (c for c in on_disk if c >= newest and incomplete_reason(c) is None):
        os.remove(os.path.join(damaged, "checkpoint_complete.json"))  # written last: its absence = interrupted
    staging = os.path.join(trial_dir, ".checkpoint_tmp_000002_4242")
    os.makedirs(staging)
    Path(staging, "algorithm_state.pkl").write_bytes(b"\x80\x05 half a pickle")
    yield {
        "storage": storage,
        "args": args,
        "env": env,
        "ray_tmp": ray_tmp,
        "sys_tmp": sys_tmp,
        "trial_dir": trial_dir,
        "out": "".join(out),
        "listeners": listeners,
        "processes": processes,
        "left_in_tmp": left_in_tmp,
        "killed_rows": all_killed_rows[trial_dir],
        "all_killed_rows": all_killed_rows,
        "staging": staging,
        "newest": newest,
        "previous": previous,
        "previous_iteration": int(previous[-6:]) + 1,
    }  # checkpoint_k holds iteration k + 1 (checkpoint_frequency 1)
    shutil.rmtree(ray_tmp, ignore_errors=True)
    shutil.rmtree(sys_tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def resumed(killed) -> subprocess.CompletedProcess:
    """`rllib train file X --storage-path S --resume` (the killed run's Ray and temp dirs, the fake key) to the end.
    The tests that look at the killed run's damaged checkpoints come first in this file: --resume removes them."""
    return subprocess.run(
        [RLLIB, *killed["args"][:5], "--resume"],
        capture_output=True,
        text=True,
        env=killed["env"],
        cwd=REPO,
        timeout=900,  # slow only on a loaded machine
    )


def _steps(row: dict) -> float:
    return row["env_runners"]["num_env_steps_sampled_lifetime"]


def test_checkpoints_are_written_complete_and_nothing_lands_in_the_system_temp_dir(killed):
    from smac_rllib.cli.checkpoints import incomplete_reason

    assert incomplete_reason(killed["previous"]) is None
    assert killed["left_in_tmp"] == [], "no checkpoint copy in the system temp dir"
    assert "no checkpoint_complete.json" in incomplete_reason(killed["newest"])


def test_evaluate_skips_the_incomplete_checkpoint_and_says_so(killed, capsys):
    trial_dir = killed["trial_dir"]
    assert os.path.isdir(killed["staging"]), "runs before --resume (the fixture `resumed`) removes it"
    assert main(["evaluate", trial_dir, "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert f"skipped {killed['newest']}: incomplete (no checkpoint_complete.json" in out
    assert f"checkpoint {killed['previous']}\n" in out
    assert "dmc/cartpole-balance: 1 episode(s), deterministic" in out

    assert main(["evaluate", killed["newest"]]) == 2  # named explicitly: refused
    err = capsys.readouterr().err.strip().splitlines()
    newest_name = os.path.basename(killed["newest"])
    assert (
        len(err) == 1
        and f"{newest_name} is incomplete" in err[0]
        and f"newest complete one is {killed['previous']}" in err[0]
    )


def test_evaluate_checks_the_video_path_and_size_before_any_episode(killed, tmp_path, capsys):
    checkpoint = killed["previous"]
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    cases = [
        ([f"{a_file}/eval.mp4"], "is a file, not a directory"),
        ([str(tmp_path)], "use a .mp4 (or .gif) file name"),
        (
            [str(tmp_path / "eval.mp4"), "--video-size", "65"],
            "an mp4 (H.264, yuv420p) needs an even frame size, e.g. 66",
        ),
        (
            [str(tmp_path / "eval.mp4"), "--video-size", "1024"],
            "--video-size 1024: dmc/cartpole-balance renders at most 640 pixels",
        ),
    ]
    if os.getuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append(([str(locked / "eval.mp4")], "is not writable"))
    for video, expected in cases:
        started = time.time()
        assert main(["evaluate", checkpoint, "--episodes", "1", "--video", *video]) == 2, video
        captured = capsys.readouterr()
        assert expected in captured.err and "episode(s)" not in captured.out, (video, captured)
        assert time.time() - started < 20, "refused before running episodes"


def test_resume_continues_from_the_last_complete_checkpoint_and_says_which(killed, resumed):
    """The killed trial: --resume removes the staging dir, says which checkpoint it restores from and why, and
    continues after the last complete checkpoint with its env-step and update counters and its replay buffer."""
    trial_dir, out = killed["trial_dir"], resumed.stdout
    assert " it   1 | 100 steps | return " in killed["out"]  # live progress
    killed_rows = killed["killed_rows"]
    assert 2 <= killed_rows[-1]["training_iteration"] < STOP, "killed mid-run"
    assert resumed.returncode == 0, out[-3000:] + resumed.stderr[-3000:]
    assert "resuming" in out and "Traceback" not in resumed.stderr
    assert f"removed {killed['staging']} (a checkpoint the interrupted run had not finished writing)" in out
    assert not os.path.exists(killed["staging"])
    assert (
        f"started  {trial_dir}, restoring from {killed['previous']} ({os.path.basename(killed['newest'])} is "
        "incomplete (no checkpoint_complete.json" in out
    ), out

    rows = _results(trial_dir)
    restart = next(i for i, r in enumerate(rows) if i > 0 and r["iterations_since_restore"] == 1)
    first_after = rows[restart]
    after = killed["previous_iteration"] + 1
    assert first_after["training_iteration"] == after >= 3, (
        "continued after the last complete checkpoint (not the incomplete one, not from scratch)"
    )
    assert _steps(first_after) == 100 * after, "env-step counter restored"
    before = next(r for r in killed_rows if r["training_iteration"] == after - 1)
    # >=: the async learner may not have run a new update yet when the first resumed result is reported
    assert first_after["num_updates_lifetime"] >= before["num_updates_lifetime"] > 0, "update counter restored"
    assert rows[-1]["training_iteration"] == STOP and _steps(rows[-1]) == 100 * STOP

    checkpoints = sorted(glob.glob(os.path.join(trial_dir, "checkpoint_*", "rllib_checkpoint.json")))
    assert len(checkpoints) >= 2  # every one kept here (keep_all above); num_to_keep itself is Tune's CheckpointConfig
    with open(os.path.join(os.path.dirname(checkpoints[-1]), "algorithm_state.pkl"), "rb") as f:
        assert "replay_buffer" in pickle.load(f), "SMAC checkpoints carry the replay buffer"


def test_the_resumed_grid_finishes_both_trials_with_a_summary_curves_and_wandb_offline(killed, resumed):
    out, storage = resumed.stdout, killed["storage"]
    assert resumed.returncode == 0, out[-3000:] + resumed.stderr[-3000:]
    # the final summary says where things are, and the curves were drawn
    assert "== cli-tiny: 2 trial(s), 2 finished, 0 failed" in out
    assert f"Curves:      {storage}/cli-tiny/curves.png" in out
    assert "rllib evaluate " in out
    assert os.path.getsize(storage / "cli-tiny" / "curves.png") > 10_000

    trial_dirs = sorted(glob.glob(str(storage / "cli-tiny" / "SMAC_*")))
    assert len(trial_dirs) == 2
    latent_dims = set()
    for trial_dir in trial_dirs:
        with open(os.path.join(trial_dir, "params.json")) as f:
            latent_dims.add(json.load(f)["latent_dim"])
        assert _results(trial_dir)[-1]["training_iteration"] == STOP
        runs = glob.glob(os.path.join(trial_dir, "wandb", "offline-run-*", "run-*.wandb"))
        assert runs, "W&B runs offline, inside the trial dir"
        # the finished run (the newest: the killed trial has the killed run's too), not the 7-byte header of a copy
        # taken before W&B finished (`wandb sync` needs the history)
        finished = max(runs, key=os.path.getmtime)
        assert os.path.getsize(finished) > 10_000, [(r, os.path.getsize(r)) for r in runs]
    assert latent_dims == {2, 4}
    foreign = [line for line in resumed.stderr.splitlines() if line.strip() and not line.startswith("rllib: ")]
    assert foreign == [], resumed.stderr[-2000:]  # with W&B on: our own notes only, nothing from Ray, Tune or W&B


def test_evaluate_checkpoint_with_video(killed, resumed, tmp_path, capsys):
    video = tmp_path / "eval.mp4"
    experiment = str(killed["storage"] / "cli-tiny")
    assert main(["evaluate", experiment, "--episodes", "1"]) == 2  # two trials: which one is the user's to say
    assert "holds the checkpoints of 2 trials" in capsys.readouterr().err
    argv = ["evaluate", killed["trial_dir"], "--episodes", "1", "--video", str(video)]
    assert main([*argv, "--video-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "dmc/cartpole-balance: 1 episode(s), deterministic | return mean" in out
    assert "length mean 100" in out
    assert video.stat().st_size > 1000
    import imageio.v3 as iio

    assert iio.improps(video).shape[1:] == (64, 64, 3)


def test_plot_one_line_per_setting(killed, resumed, tmp_path):
    from smac_rllib.cli.plot import find_trials, group_trials, load_trial

    storage = killed["storage"]
    out = tmp_path / "curves.png"
    assert main(["plot", str(storage), "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000
    trials = [load_trial(d, "env_runners/episode_return_mean") for d in find_trials(str(storage))]
    labels = sorted(label for _, label in group_trials(trials))
    assert labels == ["SMAC K=4 latent=2", "SMAC K=4 latent=4"]


def test_wandb_key_is_in_no_file_and_no_command_line(killed, resumed):
    """Ray's WandbLoggerCallback puts the key into its logging actor's runtime_env, which Ray writes to
    runtime_env_agent.log; with the CLI's local Ray the actor inherits it instead. Checked after both runs."""
    trial_dir = killed["trial_dir"]
    assert glob.glob(os.path.join(trial_dir, "wandb", "offline-run-*")), "W&B did run (offline)"
    sessions = glob.glob(os.path.join(killed["ray_tmp"], "**", "session_*", "logs"), recursive=True)
    assert len(sessions) >= 2 and any(os.listdir(s) for s in sessions), "both runs' Ray session logs are there"
    needle = FAKE_KEY.encode()
    assert _files_containing(str(killed["storage"]), needle) == []
    assert _files_containing(killed["ray_tmp"], needle) == []
    assert _files_containing(killed["sys_tmp"], needle) == []
    assert killed["processes"].count("\n") > 5 and FAKE_KEY not in killed["processes"], "no command line holds it"


def test_local_ray_listens_on_loopback_only(killed):
    listeners = killed["listeners"]
    assert len(listeners) >= 3, "GCS, raylet, workers: " + killed["out"][-2000:]
    assert all(re.match(r"^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]|\[::1\]):\d+$", a) for a in listeners), listeners
    node_ips = {row["node_ip"] for rows in killed["all_killed_rows"].values() for row in rows}
    assert node_ips == {"127.0.0.1"}, "the trials' node is the loopback one"


# --------------------------------------------------------------------------------------------- a kill during a save


class _Toy:
    """A Trainable whose second save dies half-way (``os._exit``: no ``finally``, no atexit, like SIGKILL)."""

    def setup(self, config):
        self.n = 0

    def step(self):
        self.n += 1
        return {"n": self.n}

    def save_checkpoint(self, directory):
        with open(os.path.join(directory, "state.bin"), "wb") as f:
            f.write(b"x" * 2_000_000)
        if self.n == 2:
            os._exit(9)

    def load_checkpoint(self, directory):
        pass


@pytest.mark.parametrize("mode", ["tune", "atomic"])
def test_a_kill_during_a_save_leaves_no_copy_in_the_system_temp_dir(ray_local, tmp_path, mode):
    """Tune's own save stages in tempfile.mkdtemp() (the kill leaves a full copy there); ours stages next to the
    trial's checkpoints, where --resume removes it, and the last complete checkpoint stays intact. The trainable
    runs as a Ray actor, as in Tune, with TMPDIR pointing at a directory of this test."""
    import ray
    from ray import tune
    from ray.train._internal.storage import StorageContext

    from smac_rllib.cli.checkpoints import AtomicCheckpoints, incomplete_reason, remove_staging

    sys_tmp = tmp_path / "systmp"
    sys_tmp.mkdir()
    bases = (AtomicCheckpoints, _Toy, tune.Trainable) if mode == "atomic" else (_Toy, tune.Trainable)
    cls = type("Toy", bases, {})
    storage = StorageContext(storage_path=str(tmp_path / "results"), experiment_dir_name="exp", trial_dir_name="trial")
    actor = ray.remote(num_cpus=0, runtime_env={"env_vars": {"TMPDIR": str(sys_tmp)}})(cls).remote(
        config={}, storage=storage
    )
    ray.get(actor.train.remote())
    ray.get(actor.save.remote())
    ray.get(actor.train.remote())
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.save.remote())
    trial = tmp_path / "results" / "exp" / "trial"
    orphans = glob.glob(str(sys_tmp / "**" / "state.bin"), recursive=True)
    if mode == "tune":
        assert orphans, "Ray's own save: the kill leaves the copy in the system temp dir (what this test guards)"
        return
    assert orphans == []
    assert incomplete_reason(str(trial / "checkpoint_000000")) is None
    assert not (trial / "checkpoint_000001").exists(), "never a half-written checkpoint under its final name"
    (staging,) = glob.glob(str(trial / ".checkpoint_tmp_000001_*"))
    assert os.path.getsize(os.path.join(staging, "state.bin")) == 2_000_000
    assert remove_staging(str(tmp_path / "results" / "exp")) == [staging] and not os.path.exists(staging)


def test_truncated_file_makes_a_checkpoint_incomplete(tmp_path):
    from smac_rllib.cli.checkpoints import incomplete_reason, restorable, write_marker

    trial = tmp_path / "trial"
    for i in range(3):
        d = trial / f"checkpoint_00000{i}"
        (d / "learner_group").mkdir(parents=True)
        (d / "learner_group" / "state.pkl").write_bytes(b"x" * 1000)
        write_marker(str(d), iteration=i + 1)
    (trial / "checkpoint_000002" / "learner_group" / "state.pkl").write_bytes(b"x" * 10)  # cut short
    (trial / "checkpoint_000001" / "learner_group" / "state.pkl").unlink()
    assert (
        incomplete_reason(str(trial / "checkpoint_000002")) == "learner_group/state.pkl has 10 bytes, 1000 were written"
    )
    assert incomplete_reason(str(trial / "checkpoint_000001")) == "learner_group/state.pkl is missing"
    chosen, skipped = restorable(str(trial / "checkpoint_000002"))
    assert chosen == str(trial / "checkpoint_000000") and "checkpoint_000002 is incomplete" in skipped


# --------------------------------------------------------------------------------------------- pickles from others


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_checkpoint_of_another_user_is_refused_without_trust(tmp_path, capsys):
    from smac_rllib.cli.checkpoints import check_owner
    from smac_rllib.cli.errors import UserError

    checkpoint = tmp_path / "checkpoint_000000"
    checkpoint.mkdir()
    (checkpoint / "rllib_checkpoint.json").write_text("{}")
    os.chown(checkpoint, 65534, 65534)
    with pytest.raises(
        UserError, match=r"belongs to (user 'nobody' \(uid 65534\)|uid 65534), not to you; checkpoints are pickles"
    ):
        check_owner(str(checkpoint), trust=False)
    check_owner(str(checkpoint), trust=True)
    assert main(["evaluate", str(checkpoint)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pass --trust only if you trust" in err[0]
    os.chown(checkpoint, 0, 0)
    checkpoint.chmod(0o777)
    with pytest.raises(UserError, match="is writable by every user"):
        check_owner(str(checkpoint), trust=False)


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_resume_of_another_users_run_is_refused_before_ray_starts(tmp_path, capfd, ray_never_starts):
    exp = tmp_path / "cli-tiny"
    (exp / "SMAC_00000_00000" / "checkpoint_000000").mkdir(parents=True)
    (exp / "tuner.pkl").write_bytes(b"")  # what makes Tune's Tuner.can_restore say yes
    os.chown(exp / "SMAC_00000_00000" / "checkpoint_000000", 65534, 65534)

    started = time.time()
    assert main(["train", "file", str(TINY), "--storage-path", str(tmp_path), "--resume"]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and f"{exp}/SMAC_00000_00000/checkpoint_000000 (in the experiment directory {exp}) belongs to" in err[0]
        and "--trust" in err[0]
    ), err
    assert time.time() - started < 30


def test_help_says_checkpoints_are_pickles(capsys):
    for argv in (["evaluate", "--help"], ["train", "file", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = " ".join(capsys.readouterr().out.split())
        assert "pickles" in out and "--trust" in out, argv


# --------------------------------------------------------------------------------------------- config errors


def _failing_sac(trainable, max_failures: int, storage: Path):
    from ray import tune

    from smac_rllib.cli.progress import ProgressPrinter

    from smac_rllib.cli.yaml_loader import load_experiments

    path = storage.parent / f"{storage.name}.yaml"
    path.write_text(
        "bad:\n  run: SAC\n  env: Pendulum-v1\n  stop: {training_iteration: 1}\n  config:\n    num_env_runners: 0\n"
        "    model_config: {fcnet_activation: relux}\n"
    )
    # the dry run builds the module and refuses this before Ray (test_mistakes.py): here the config goes to Tune
    # unbuilt, as one whose error shows only in the trial would
    (spec,) = load_experiments(str(path), build=False)
    param_space = spec.param_space
    tuner = tune.Tuner(
        trainable,
        param_space=param_space,
        run_config=tune.RunConfig(
            storage_path=str(storage),
            name="bad",
            stop={"training_iteration": 1},
            verbose=0,
            callbacks=[ProgressPrinter()],
            failure_config=tune.FailureConfig(max_failures=max_failures),
        ),
    )
    (result,) = list(tuner.fit())
    (error_txt,) = glob.glob(str(storage / "bad" / "*" / "error.txt"))
    return result, Path(error_txt).read_text().count("Failure # ")


def test_config_error_at_trial_start_is_not_retried(ray_local, tmp_path, capfd):
    """An unknown activation (given to Tune without the dry run's module build): a ValueError in the trial's
    constructor, the same on every try. Tune retries it max_failures times; with the
    CLI's trainable and retry policy it fails once, reported in one line."""
    from smac_rllib.cli.checkpoints import install_retry_policy, trainable

    install_retry_policy()
    result, attempts = _failing_sac("SAC", 1, tmp_path / "plain")  # Tune's own trainable: retried
    assert result.error is not None and attempts == 2
    capfd.readouterr()

    started = time.time()
    result, attempts = _failing_sac(trainable("SAC"), 3, tmp_path / "ours")
    assert result.error is not None and attempts == 1, "not retried"
    out = capfd.readouterr().out
    (line,) = [line for line in out.splitlines() if "] ERROR: " in line]
    assert "TrialConfigError: ValueError: Unknown activation (relux) for framework=torch!" in line
    assert "not retried; fix the config" in line
    print(f"failed once in {time.time() - started:.1f}s")


# --------------------------------------------------------------------------------------------- ASHA rungs


@pytest.mark.parametrize(
    "grace, factor, stale", [(3, 3, "iteration(s) 3, 9, but"), (4, 3, None), (1, 3, "iteration(s) 3, 9, but")]
)
def test_asha_rungs_that_do_not_evaluate_are_refused(tmp_path, capfd, grace, factor, stale):
    """Between evaluations RLlib repeats the last one, so a rung there judges trials by an earlier score; a rung
    before the first evaluation (iteration 1 of grace 1) waits for it (ASHA's milestones are ">=")."""
    text = TINY.read_text().replace("training_iteration: 3", "training_iteration: 20")  # max_t's horizon
    text = text.replace("    latent_dim: 4\n", "    latent_dim: {grid_search: [4, 8]}\n")  # trials for ASHA to compare
    text = text.replace(
        "  max_failures: 0\n",
        f"""  max_failures: 0
  scheduler:
    type: ASHA
    metric: evaluation/env_runners/episode_return_mean
    max_t: 20
    grace_period: {grace}
    reduction_factor: {factor}
""",
    )
    path = tmp_path / "asha.yaml"
    path.write_text(text)
    code = main(["train", "file", str(path), "--dry-run"])
    err = capfd.readouterr().err
    if stale is None:
        assert code == 0 and "ASHA" not in err
    else:
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert f"ASHA compares trials on evaluation/env_runners/episode_return_mean at {stale}" in err
        assert "evaluation runs every 2" in err and "set grace_period to a multiple of evaluation_interval (e.g." in err


# --------------------------------------------------------------------------------------------- checkpoint ranking


@pytest.mark.parametrize("order, best", [("max", 1), ("min", 0)])
def test_num_to_keep_keeps_the_best_checkpoint_by_a_nested_score_key(tmp_path, order, best):
    """Tune's own checkpoint manager, fed RLlib-style nested results: with ``num_to_keep: 1`` it keeps the best by
    ``evaluation/env_runners/episode_return_mean`` and the newest (Tune never deletes the newest); without the CLI's
    ranking it kept the newest alone, ranking nested keys by time."""
    from ray.train import Checkpoint, CheckpointConfig
    from ray.train._internal.checkpoint_manager import _CheckpointManager
    from ray.train._internal.session import _TrainingResult

    from smac_rllib.cli.ranking import install_nested_score_ranking

    install_nested_score_ranking()
    manager = _CheckpointManager(
        CheckpointConfig(
            num_to_keep=1,
            checkpoint_score_attribute="evaluation/env_runners/episode_return_mean",
            checkpoint_score_order=order,
        )
    )
    returns = [10.0, 30.0, 20.0]  # the best by max is the 2nd, by min the 1st; the newest is the 3rd
    paths = []
    for i, value in enumerate(returns):
        path = tmp_path / f"checkpoint_{i:06d}"
        path.mkdir()
        paths.append(path)
        metrics = {"training_iteration": i + 1, "evaluation": {"env_runners": {"episode_return_mean": value}}}
        manager.register_checkpoint(_TrainingResult(Checkpoint.from_directory(str(path)), metrics))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({paths[best].name, paths[2].name})
    assert manager.best_checkpoint_results[-1].checkpoint.path == str(paths[best])


@pytest.mark.parametrize("order", ["max", "min"])
def test_a_checkpoint_before_the_first_evaluation_ranks_worst(tmp_path, order, caplog):
    """The first checkpoint comes before any evaluation (no score): Tune alone logs an error listing every result key
    and scores it -inf, which ``min`` ranks best, so ``num_to_keep: 1`` kept it over an evaluated one."""
    from ray.train import Checkpoint, CheckpointConfig
    from ray.train._internal.checkpoint_manager import _CheckpointManager
    from ray.train._internal.session import _TrainingResult

    from smac_rllib.cli.ranking import install_nested_score_ranking

    install_nested_score_ranking()
    attribute = "evaluation/env_runners/episode_return_mean"
    manager = _CheckpointManager(
        CheckpointConfig(num_to_keep=1, checkpoint_score_attribute=attribute, checkpoint_score_order=order)
    )
    results = [{}, {"evaluation": {"env_runners": {"episode_return_mean": 5.0}}}, {}]  # evaluated: the 2nd only
    for i, extra in enumerate(results):
        (tmp_path / f"checkpoint_{i:06d}").mkdir()
        checkpoint = Checkpoint.from_directory(str(tmp_path / f"checkpoint_{i:06d}"))
        manager.register_checkpoint(_TrainingResult(checkpoint, {"training_iteration": i + 1, **extra}))
    assert manager.best_checkpoint_results[-1].checkpoint.path == str(tmp_path / "checkpoint_000001")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_000001", "checkpoint_000002"]
    assert "Result dict has no key" not in caplog.text
