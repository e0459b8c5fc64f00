"""``rllib``: train tuned examples with Ray Tune, evaluate checkpoints, plot learning curves.

    rllib train file tuned_examples/smac_state.yaml [--stop JSON] [--config JSON] [--storage-path DIR]
                     [--num-samples N] [--seed S] [--resume] [--wandb | --no-wandb] [--strict-resources]
    rllib evaluate CHECKPOINT [--episodes N] [--video out.mp4]
    rllib plot RESULTS_DIR [--out curves.png]

The process environment is set here, before Ray or dm_control are imported (a newcomer needs no variables):
MUJOCO_GL=egl (headless rendering), RAY_AUTH_MODE=disabled for a local Ray, one torch/OpenMP thread per
process, WANDB_MODE=offline without a W&B key, and Tune's strict metric check off (an iteration may end
before the first 1000-step DMC episode does, docs/design.md §3). Mistakes print one line and exit with 2, before
Ray starts (an ``--address`` that does not answer as a Ray cluster within 5 s included, ``--dry-run`` too).
``--config`` may be given several times: the JSON objects merge in order (the later value wins, nested mappings
merge); ``{"env": ...}`` replaces the file's env. ``--stop`` likewise (the merged criteria are said; one criterion
with two values is refused); a key twice in one JSON object is refused (as in the YAML file). ``--resume`` runs to
the stop the file (or ``--stop``) gives now (``resume_stop.py``); a run whose every trial already reached it is said
in one line, without Ray.
Ctrl-C during ``rllib train`` checkpoints every running trial, prints the exact ``--resume`` command and
exits with 130; a second Ctrl-C stops at once (train.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable

from smac_rllib import headless_gl
from smac_rllib.cli import wandb_key
from smac_rllib.cli.other_forms import other_forms, other_train_forms, repeated_option, unknown_option
from smac_rllib.cli.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR, PROG, UserError, one_line, resume_command


def prepare_environment(address: str | None = None) -> None:
    """Process-wide settings that must exist before ``import ray`` / dm_control (workers inherit them)."""
    headless_gl()  # already run by importing the package; here for callers that reset the environment
    if not (address or os.environ.get("RAY_ADDRESS")):
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # Ray 2.60 token auth: off for the local Ray we start
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # torch on 1 thread per process (docs/design.md §3)
    if os.environ.get("WANDB_MODE") == "dryrun":  # W&B's older name for offline; Ray's callback knows "offline" only
        os.environ["WANDB_MODE"] = "offline"
    if not wandb_key.has_key():
        os.environ.setdefault("WANDB_MODE", "offline")  # no key: log locally, `wandb sync` later
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")


def check_gl_backend() -> None:
    """dm_control loads the GL backend ``MUJOCO_GL`` names when first imported (states too: the package imports its
    renderer); a backend this machine lacks, or a ``PYOPENGL_PLATFORM`` that contradicts it, fails there."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # glfw's "DISPLAY is missing": said below when it matters
            from dm_control import _render  # noqa: F401
    except Exception as e:  # noqa: BLE001 - ImportError, AttributeError (no library), RuntimeError (unknown name)
        gl, platform = os.environ.get("MUJOCO_GL", ""), os.environ.get("PYOPENGL_PLATFORM", "")
        if "MUJOCO_EGL_DEVICE_ID" in str(e):  # a device number this machine does not have
            raise UserError(
                f"MUJOCO_EGL_DEVICE_ID={os.environ.get('MUJOCO_EGL_DEVICE_ID')}: {one_line(e, 160)}; unset it (EGL "
                "picks a device) or give one of those numbers"
            ) from None
        raise UserError(
            f"MUJOCO_GL={gl} (PYOPENGL_PLATFORM={platform or 'unset'}): dm_control cannot load this GL backend "
            f"({one_line(e, 160)}); unset both (egl, the default, renders headless on CPU and GPU) or install the "
            "backend's library (osmesa: apt install libosmesa6)"
        ) from None


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line (and exit code 2), like every other mistake."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # `--num-sample` must not silently mean --num-samples
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(EXIT_USER_ERROR, f"{PROG}: error: {message} (see `{self.prog} --help`)\n")


def _int_in(low: int, high: int | None = None, example: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in [low, high) (high None: unbounded); a mistake is argparse's one-line error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer{example}") from None
        if value < low or (high is not None and value >= high):
            span = f">= {low}" if high is None else f"in [{low}, {'2**32' if high == 2**32 else high})"
            raise argparse.ArgumentTypeError(f"{value} must be {span}{example}")
        return value

    parse.__name__ = "int"
    return parse


SEED = _int_in(0, 2**32, " (numpy seeds), e.g. --seed 0")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="SMAC / RLlib on DeepMind Control: train tuned examples, evaluate, plot.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    train = sub.add_parser("train", help="train from a tuned-example YAML file (rllib train file X.yaml)")
    train_sub = train.add_subparsers(dest="mode", required=True, parser_class=_Parser)
    f = train_sub.add_parser(
        "file",
        help="run every experiment of a tuned-example YAML file, in order",
        description="Run every experiment of a tuned-example YAML file, in order. --resume loads "
        "checkpoints, which are pickles: see --trust.",
    )
    f.add_argument("path", help="tuned-example YAML, e.g. tuned_examples/smac_state.yaml")
    f.add_argument(
        "--stop",
        metavar="JSON",
        action="append",
        help='replaces the file\'s stop criteria, e.g. \'{"training_iteration": 5}\' '
        "(given twice: both objects, merged in order)",
    )
    f.add_argument(
        "--config",
        metavar="JSON",
        action="append",
        help='merged into every experiment\'s config, e.g. \'{"num_particles": 8}\'; '
        '\'{"env": "dmc/cheetah-run"}\' replaces the file\'s env; given twice: merged in order, the later value wins',
    )
    f.add_argument(
        "--storage-path",
        metavar="DIR",
        help="where results go (<DIR>/<experiment name>; default ~/ray_results): a directory, file:///abs/path or "
        "a cloud URI (s3://bucket/path, gs://...)",
    )
    f.add_argument("--num-samples", type=int, metavar="N", help="repeats of every grid point")
    f.add_argument("--seed", type=SEED, help="sets config.seed (replaces a seed grid), in [0, 2**32)")
    f.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest run of each experiment from each trial's newest complete "
        "checkpoint (replay buffers included), to the stop the file (or --stop) gives now: raise it to train finished "
        "trials further. Checkpoints are pickles: loading one runs code its author chose, "
        "so an experiment directory owned by another user (or writable by everyone) is refused without --trust",
    )
    f.add_argument(
        "--trust",
        action="store_true",
        help="with --resume: load checkpoints owned by another user (pickles: only ones you trust)",
    )
    f.add_argument(
        "--wandb",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="log to Weights & Biases (offline without an API key); default: as the file says",
    )
    f.add_argument(
        "--strict-resources", action="store_true", help="fail instead of falling back to CPU when GPUs/CPUs are missing"
    )
    f.add_argument(
        "--address",
        help="an existing Ray cluster, host:port or ray://host:port or auto (default: $RAY_ADDRESS, "
        "else a local Ray); one that does not answer as a Ray cluster within 5 s is an error (--dry-run checks it too)",
    )
    f.add_argument("--dry-run", action="store_true", help="check the file and print the trials, run nothing")
    f.add_argument("--no-plot", action="store_true", help="do not write <experiment dir>/curves.png at the end")
    f.add_argument("-v", "--verbose", action="store_true", help="show Ray's worker logs and Tune's status tables")
    f.set_defaults(func=_train)

    ev = sub.add_parser(
        "evaluate",
        help="deterministic evaluation of a checkpoint (mean/std return, optional mp4)",
        description="Deterministic evaluation of a checkpoint. Checkpoints are pickles: loading one runs code "
        "its author chose, so a checkpoint owned by another user (or in a directory everyone can write) is "
        "refused unless --trust is given.",
    )
    ev.add_argument(
        "checkpoint",
        help="a checkpoint directory, or a trial directory, or an experiment directory of one trial (its newest "
        "complete checkpoint; one a killed run left half-written is skipped)",
    )
    ev.add_argument(
        "--trust", action="store_true", help="load a checkpoint owned by another user (a pickle: only one you trust)"
    )
    ev.add_argument(
        "--episodes",
        type=_int_in(1, example=", e.g. --episodes 10"),
        default=10,
        help="number of episodes (default 10)",
    )
    ev.add_argument("--video", metavar="OUT.mp4", help="write the first episode as an mp4")
    ev.add_argument(
        "--video-size",
        type=_int_in(16, 4097, ", e.g. --video-size 256"),
        default=256,
        help="side of the video frames in pixels, 16..4096 (default 256)",
    )
    ev.add_argument("--seed", type=SEED, default=12345, help="seed of the evaluation episodes, in [0, 2**32)")
    ev.add_argument(
        "--wandb", action="store_true", help="also log the returns and the video to W&B (offline without a key)"
    )
    ev.set_defaults(func=_evaluate)

    pl = sub.add_parser("plot", help="learning curves from Tune results: mean and 95%% interval over seeds")
    pl.add_argument("results_dir", help="an experiment directory (or a directory of several)")
    pl.add_argument("--out", help="output PNG (default <results_dir>/curves.png)")
    pl.add_argument(
        "--metric",
        default=None,
        help="y axis (default evaluation/env_runners/episode_return_mean, the "
        "deterministic policy's evaluation return; falls back to env_runners/episode_return_mean, the "
        "training return, when a run has no evaluation)",
    )
    pl.set_defaults(func=_plot)
    return parser


def _train(args) -> int:
    # lazy: `rllib --help` loads none of these, and the arguments' mistakes (JSON, counts, a missing file) end here,
    # before train.py loads Ray and torch (~7 s)
    from smac_rllib.cli.experiment_spec import Overrides
    from smac_rllib.cli.yaml_reader import read_yaml

    args.overrides = Overrides.from_args(args)
    if not os.path.isfile(args.path):
        read_yaml(args.path)  # says what is wrong with the path
    from smac_rllib.cli.train import run_train  # lazy: as above

    return run_train(args)


def _evaluate(args) -> int:
    from smac_rllib.cli.evaluate import run_evaluate  # lazy: see _train

    return run_evaluate(args)


def _plot(args) -> int:
    from smac_rllib.cli.plot import run_plot  # lazy: see _train

    return run_plot(args)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if (
        fix := other_train_forms(argv)
        or other_forms(argv)
        or repeated_option(parser, argv)
        or unknown_option(parser, argv)
    ):
        print(f"{PROG}: error: {fix}", file=sys.stderr, flush=True)
        return EXIT_USER_ERROR
    args = parser.parse_args(argv)
    args.argv = argv
    prepare_environment(getattr(args, "address", None))
    try:
        if args.command in ("train", "evaluate"):
            check_gl_backend()
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:  # before the run started, or a second Ctrl-C (train.py: the first one checkpoints)
        hint = f"; continue with: {resume_command(args)}" if args.command == "train" else ""
        print(f"\n{PROG}: interrupted{hint}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # python -m smac_rllib.cli.main
    sys.exit(main())
