"""Arguments other tools take, answered with ours before argparse sees them: RLlib's and Tune's older flags
(``FOREIGN_FLAGS``, ``FOREIGN_EVALUATE_FLAGS``), RLlib's other ``rllib train`` forms, typographic dashes pasted from
a page, values the shell split (unquoted JSON, several seeds), stdin as the file, and a value option given twice.
No Ray import: ``main.py`` asks before anything loads."""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import os

# Flags of RLlib's own `rllib train` and of older Tune CLIs -> ours.
FOREIGN_FLAGS = {
    "--local-dir": "Tune's older name: write --storage-path DIR",
    "--storage_path": "write --storage-path DIR",
    "--checkpoint-freq": "write checkpoint_config: {checkpoint_frequency: N} in the file",
    "--checkpoint-at-end": "write checkpoint_config: {checkpoint_at_end: true} in the file",
    "--restore": "continue a run with --resume (same --storage-path); evaluate a checkpoint with rllib evaluate",
    "--env": "the env is the file's env: key; to change it: --config '{\"env\": \"dmc/cheetah-run\"}'",
    "--run": "the algorithm is the file's run: key",
    "--algo": "the algorithm is the file's run: key",
    "--framework": "every algorithm here runs on torch; drop it",
    "--num-gpus": "write --config '{\"num_gpus_per_learner\": 1}'",
    "--num-cpus": "Ray takes the machine's CPUs; a trial's come from its config (num_env_runners, ...)",
    "--num-env-runners": "write --config '{\"num_env_runners\": N}'",
    "--num-workers": "write --config '{\"num_env_runners\": N}'",
    "--ray-address": "connect with --address ADDRESS (or RAY_ADDRESS=... in the environment; cluster/README.md)",
    **dict.fromkeys(
        ("--experiment", "--experiments", "--only", "--select"),
        "rllib train file runs every experiment of the file; to run one, give the others '.' names (templates, not "
        "run) or put it in a file of its own",
    ),
    "--wandb-project": "W&B's project is the file's wandb: {project: NAME} (experiment key), with --wandb",
    **dict.fromkeys(
        ("--config-file", "--config-path", "--config-name", "--cfg", "--overrides", "--override"),
        "--config takes a JSON object of config keys (--config '{\"num_particles\": 8}', several merge in order; "
        "from a JSON file: --config \"$(cat overrides.json)\"; YAML settings go in the experiment file)",
    ),
    "--wandb-key": "W&B reads WANDB_API_KEY from the environment or `wandb login`; then --wandb",
    "--wandb-run-name": "W&B names each run after its trial; the group is the file's wandb: {group: NAME}",
    **dict.fromkeys(
        ("--ray-num-cpus", "--ray-num-gpus", "--ray-num-nodes", "--ray-object-store-memory", "--ray-ui"),
        "the local Ray gets the CPUs and GPUs the experiments ask for (num_env_runners, num_gpus_per_learner, ...); "
        "a cluster is joined with --address",
    ),
    "--upload-dir": "write --storage-path s3://bucket/dir (or gs://...)",
    **dict.fromkeys(("--scheduler", "--scheduler-config"), "write scheduler: {type: ASHA, ...} in the file"),
    **dict.fromkeys(
        ("--keep-checkpoints-num", "--checkpoint-score-attr"),
        "write checkpoint_config: {num_to_keep: N, checkpoint_score_attribute: KEY} in the file",
    ),
    "--max-failures": "write max_failures: N in the file (experiment key)",
    **dict.fromkeys(
        ("--experiment-name", "--name", "--exp-name", "--run-name"),
        "the experiment's name is its top-level key in the file (results go to <storage-path>/<name>)",
    ),
    **dict.fromkeys(("--torch", "--eager", "--trace"), "every algorithm here runs on torch; drop it"),
    "--local-mode": "Ray's local mode is gone; --config '{\"num_env_runners\": 0}' samples in the trial process",
    "--vv": "write -v (--verbose)",
    # Stable-Baselines3 / CleanRL scripts' flags
    "--total-timesteps": "write --stop '{\"env_runners/num_env_steps_sampled_lifetime\": N}'",
    "--env-id": "the env is the file's env: key; to change it: --config '{\"env\": \"dmc/cheetah-run\"}'",
    "--track": "W&B logging is --wandb",
    "--wandb-project-name": "W&B's project is the file's wandb: {project: NAME} or WANDB_PROJECT=NAME, with --wandb",
    "--capture-video": "record a trained policy with rllib evaluate CHECKPOINT --video eval.mp4",
    **dict.fromkeys(
        ("--cuda", "--device", "--gpu", "--gpus", "--use-gpu"),
        "the learner's device follows the config: --config '{\"num_gpus_per_learner\": 1}' (0: CPU)",
    ),
    **dict.fromkeys(
        ("--wandb-entity", "--entity"),
        "W&B's entity is the file's wandb: {entity: NAME} or WANDB_ENTITY=NAME, with --wandb",
    ),
    **dict.fromkeys(
        ("--learning-rate", "--buffer-size", "--batch-size", "--learning-starts", "--tau", "--gamma"),
        "config settings go in the file or --config JSON, e.g. --config '{\"critic_lr\": 0.0003}'",
    ),
    "-c": "write --config '{\"num_particles\": 8}' (JSON; given twice, merged in order)",
    "-s": "write --stop '{\"training_iteration\": 10}'",
    "--export-formats": "a checkpoint already holds the torch module (rllib evaluate CHECKPOINT reads it)",
}
# Commands of other CLIs (Tune's, SB3-zoo's, ...) -> ours.
_TRAIN = "rllib train file X.yaml trains (with Ray Tune underneath: sweeps, ASHA, --resume)"
OTHER_COMMANDS = {
    **dict.fromkeys(("tune", "run", "fit", "start", "launch", "experiment"), _TRAIN),
    **dict.fromkeys(
        ("eval", "test", "enjoy", "play", "record"), "rllib evaluate CHECKPOINT --episodes 10 [--video out.mp4]"
    ),
    **dict.fromkeys(("visualize", "plots", "curves", "show"), "rllib plot RESULTS_DIR [--out curves.png]"),
}
# Flags other plotting tools take -> ours.
FOREIGN_PLOT_FLAGS = {
    "--metrics": "--metric KEY plots one result key (default: the evaluation return); one command per key",
    "--y": "--metric KEY",
    "--x": "the x axis is the env steps (frames with action repeat); it has no switch",
    "--output": "--out curves.png",
    "-o": "--out curves.png",
}
# Flags of RLlib's older `rllib evaluate` / `rllib rollout` -> ours.
FOREIGN_EVALUATE_FLAGS = {
    **dict.fromkeys(
        ("--deterministic", "--explore", "--no-explore"),
        "rllib evaluate runs the deterministic policy already (the mean action, explore: false); drop it",
    ),
    **dict.fromkeys(("--render", "--video-dir", "--no-render"), "record the first episode with --video OUT.mp4"),
    "--steps": "evaluation counts whole episodes: --episodes N",
    "--out": "rllib evaluate prints the returns; --video OUT.mp4 records an episode",
    "--run": "the algorithm is the checkpoint's own",
    "--config": "the checkpoint's config is used as it was trained",
    **dict.fromkeys(
        ("--camera", "--camera-id", "--camera_id"),
        "the video films the checkpoint's env with its env_config camera_id (dmc: 0; quadruped: 2); set it in the "
        "training file's env_config",
    ),
}


def other_train_forms(argv: list[str]) -> str | None:
    """The fix for RLlib's other ``rllib train`` forms (``-f FILE``; ``--algo X --env Y`` without a file)."""
    if argv[:1] != ["train"] or len(argv) < 2 or argv[1] == "file":
        return None
    if argv[1] in ("-f", "--config-file", "--file") or argv[1].startswith(("--config-file=", "--file=")):
        path = argv[1].partition("=")[2] or (argv[2] if len(argv) > 2 else "X.yaml")
        return f"`rllib train {argv[1].partition('=')[0]} FILE` is RLlib's older form; write: rllib train file {path}"
    if argv[1].split("=")[0] in ("--algo", "--run", "--env"):
        return (
            "this rllib trains from a YAML file only (`rllib train file X.yaml`; one-line overrides with --config "
            "and --stop); write the algorithm and env in a file, e.g. a copy of tuned_examples/smac_state_quick.yaml"
        )
    return None


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """The ``--options`` of every subcommand that take one value (``--seed 3``; not ``--config``, which merges)."""
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _value_options(sub)
        elif type(action) is argparse._StoreAction:
            found.update(o for o in action.option_strings if o.startswith("--"))
    return found


# Dashes that web pages and word processors put where a command had "--" or "-" (en, em, figure dash, minus).
TYPOGRAPHIC_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"


def other_forms(argv: list[str]) -> str | None:
    """The fix for arguments other tools take here: typographic dashes, several plot directories or YAML files,
    RLlib's ``evaluate --env``, other CLIs' flags (``FOREIGN_FLAGS``)."""
    for arg in argv:
        if arg and arg[0] in TYPOGRAPHIC_DASHES:  # "" (an unset shell variable) is no flag
            flag = "--" + arg.lstrip(TYPOGRAPHIC_DASHES + "-").split("=")[0]
            return (
                f"{arg.split('=')[0]!r} starts with a typographic dash (U+{ord(arg[0]):04X}, pasted from a web page "
                f"or a document?), not '-'; type it as {flag}"
            )
    if argv[:1] == ["plot"] and (flag := next((a for a in argv if a.split("=")[0] in FOREIGN_PLOT_FLAGS), None)):
        return f"rllib plot has no {flag.split('=')[0]}: {FOREIGN_PLOT_FLAGS[flag.split('=')[0]]}"
    own = ("--out", "--metric", "-h", "--help", "-v", "--verbose")  # another flag: unknown_option names it
    if argv[:1] == ["plot"] and all(a.split("=")[0] in own for a in argv if a.startswith("--")):
        several = len(_paths(argv, ("-h", "--help"))) > 1  # plot's options all take a value
    else:
        several = False
    if several:
        return (
            "rllib plot takes one directory; it plots every experiment under it, so put the runs to compare under "
            "one parent (e.g. one --storage-path) and pass that"
        )
    paths = _paths(argv, ("--trust", "--wandb", "-h", "--help"))  # evaluate's flags without a value
    if argv[:1] == ["evaluate"] and len(paths) > 1:  # `checkpoint_*`: the shell expanded a pattern
        return (
            f"rllib evaluate takes one checkpoint (given {len(paths)}: {paths[0]} ...; a pattern the shell expanded?); "
            "pass one, or the trial directory for its newest checkpoint"
        )
    if argv[:1] == ["evaluate"] and any(a == "--env" or a.startswith("--env=") for a in argv):
        return "rllib evaluate runs the env the checkpoint was trained on (its config); it has no --env"
    if argv[:1] == ["evaluate"]:
        for flag in (arg.split("=")[0] for arg in argv[1:]):
            if flag in FOREIGN_EVALUATE_FLAGS:
                return f"rllib evaluate has no {flag}: {FOREIGN_EVALUATE_FLAGS[flag]}"
    if argv[:1] and argv[0] in OTHER_COMMANDS:
        file = next((a for a in argv if a.endswith(YAML_SUFFIXES)), "X.yaml")  # the user's own file in the fix
        return f"rllib has no {argv[0]} command: {OTHER_COMMANDS[argv[0]].replace('X.yaml', file)}"
    if argv[:1] == ["rollout"]:  # RLlib < 2.0
        return (
            "`rllib rollout` is RLlib's older command: rllib evaluate CHECKPOINT --episodes 10 (its env and algorithm)"
        )
    if argv[:1] == ["train"] and len(argv) > 1 and argv[1] != "file" and not argv[1].startswith("-"):
        rest = argv[1:] if argv[1].endswith(YAML_SUFFIXES) else argv[2:]  # `train x.yaml` or `train fle x.yaml`
        return f"rllib train runs a file: rllib train file {' '.join(rest) or 'X.yaml'} ('{argv[1]}' is no subcommand)"
    if argv[:1] == ["train"] and "file" in argv[2:] and argv[1].startswith("-"):  # `rllib train --seed 3 file x`
        return f"the options of rllib train file go after the file: rllib train file {_after_file(argv)}"
    if argv[:2] == ["train", "file"]:
        if fix := _split_values(argv):
            return fix
        if "--wandb" in argv and "--no-wandb" in argv:
            return (
                "--wandb and --no-wandb contradict each other: keep one (--no-wandb turns off the file's wandb: block)"
            )
        after = argv[argv.index("--resume") + 1 :] if "--resume" in argv else []
        if after and after[0].upper() in ("AUTO", "LOCAL", "REMOTE", "ERRORED_ONLY", "TRUE", "PROMPT"):
            return (
                f"--resume takes no value ({after[0]} is Tune's older resume= mode): --resume continues the run "
                "under --storage-path, errored trials included"
            )
        for flag in (arg.split("=")[0] for arg in argv[2:]):
            if flag in FOREIGN_FLAGS:
                return f"rllib train file has no {flag}: {FOREIGN_FLAGS[flag]}"
        envs = [
            a
            for i, a in enumerate(argv[3:], 3)
            if a.startswith("dmc/") and not _after_value_option(argv, i, tuple(SWITCHES))
        ]
        if envs:  # `rllib train file x.yaml dmc/cartpole-swingup`
            return f"the env is the file's env: key; to run another: --config '{{\"env\": \"{envs[0]}\"}}'"
        files = [a for a in argv[2:] if not a.startswith("-") and a.endswith((".yaml", ".yml"))]
        if len(files) > 1:  # `rllib train file a.yaml b.yaml`
            return (
                f"one YAML file per command (given: {' '.join(files)}): put the experiments in one file (each "
                "top-level key is an experiment, all run in one command) or run one command per file"
            )
    return None


YAML_SUFFIXES = (".yaml", ".yml", ".json")
# rllib train file's switches (no value) -> where the value a user gives them goes instead
SWITCHES = {
    "--wandb": "the W&B project is the file's wandb: {project: NAME} or WANDB_PROJECT=NAME",
    "--no-wandb": "",
    "--dry-run": "",
    "--no-plot": "",
    "--strict-resources": "",
    "--verbose": "",
}
EXAMPLES = {"--config": '{"num_particles": 8}', "--stop": '{"training_iteration": 10}'}


def _after_file(argv: list[str]) -> str:
    """``rllib train --seed 3 file x.yaml --wandb`` -> ``x.yaml --seed 3 --wandb``."""
    at = argv.index("file", 2)
    return " ".join([*argv[at + 1 : at + 2], *argv[1:at], *argv[at + 2 :]])


def _split_values(argv: list[str]) -> str | None:
    """Values the shell split or that were meant for stdin: ``--config {"k": 1}`` unquoted (the shell drops the
    quotes and splits at the space), ``--seed 0 1 2``, ``file -``."""
    if argv[2:3] == ["-"]:
        return "rllib train file reads a file path, not stdin ('-'): save the YAML (e.g. cat > run.yaml) and pass it"
    for i, arg in enumerate(argv[:-1]):
        value, rest = argv[i + 1], list(itertools.takewhile(lambda a: not a.startswith("-"), argv[i + 2 :]))
        if arg in ("--config", "--stop") and value.startswith("{") and rest:  # one argument: json_args says why
            try:
                json.loads(value)
            except json.JSONDecodeError:
                return (
                    f"{arg} {' '.join([value, *rest])}: the shell dropped the JSON's quotes or split it at its spaces; "
                    f"wrap it in single quotes, e.g. {arg} '{EXAMPLES[arg]}'"
                )
        a_file = value.endswith(YAML_SUFFIXES) or os.path.exists(value)  # the experiment file after the switch
        if arg in SWITCHES and not value.startswith("-") and not a_file:
            more = f"; {SWITCHES[arg]}" if SWITCHES[arg] else ""
            return f"{arg} takes no value (given: {value}){more}"
        if arg == "--seed" and rest and all(a.isdigit() for a in [value, *rest]):
            seeds = ", ".join([value, *rest])
            return (
                f"--seed takes one seed (given: {value} {' '.join(rest)}); for several, sweep it: "
                f"--config '{{\"seed\": {{\"grid_search\": [{seeds}]}}}}'"
            )
    return None


def repeated_option(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """argparse keeps the last of ``--seed 0 --seed 1`` silently; a value option given twice is a mistake."""
    for option in sorted(_value_options(parser)):
        if sum(a == option or a.startswith(option + "=") for a in argv) > 1:
            return f"{option} is given twice; it takes one value (the last would silently win): give it once"
    return None


# Words of a flag that say little about what it sets (``--n-eval-episodes`` is about episodes).
_FILLER_WORDS = {"n", "num", "no", "eval", "use", "enable", "disable", "set", "max", "min", "per", "the", "of"}


def unknown_option(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """A flag the subcommand does not take (after the other tools' forms above): the option sharing its words
    (``--n-eval-episodes``: --episodes), a close spelling, or the subcommand's options, instead of argparse's bare
    "unrecognized arguments"."""
    sub, names = parser, []
    for word in argv[:2]:
        choices = next((a.choices for a in sub._actions if isinstance(a, argparse._SubParsersAction)), {})
        if word not in choices:
            break
        sub, names = choices[word], [*names, word]
    if sub is parser:
        return None
    takes_value = {o for a in sub._actions if a.nargs is None and a.option_strings for o in a.option_strings}
    known = sorted(o for a in sub._actions for o in a.option_strings if o.startswith("--"))
    args = argv[len(names) :]
    for i, arg in enumerate(args):
        flag = arg.split("=")[0]
        if not arg.startswith("-") or arg == "-" or _is_number(arg) or (i and args[i - 1] in takes_value):
            continue
        if flag in known or flag in ("-h", "-v"):
            continue
        words = set(flag.lstrip("-").replace("_", "-").split("-")) - _FILLER_WORDS
        sharing = [o for o in known if words & set(o.lstrip("-").split("-"))]
        close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
        hint = f"did you mean {(sharing if len(sharing) == 1 else close)[0]}?" if len(sharing) == 1 or close else ""
        return f"rllib {' '.join(names)} has no {flag}; {hint or 'its options: ' + ', '.join(known)}"
    return None


def _paths(argv: list[str], switches: tuple[str, ...]) -> list[str]:
    """The positional arguments of a subcommand: neither flags nor the values of its options (all but ``switches``)."""
    return [
        a for i, a in enumerate(argv[1:], 1) if not a.startswith("-") and not _after_value_option(argv, i, switches)
    ]


def _after_value_option(argv: list[str], i: int, switches: tuple[str, ...]) -> bool:
    """Whether ``argv[i]`` is the value of the option before it (an option that is not one of ``switches``)."""
    before = argv[i - 1]
    return before.startswith("-") and "=" not in before and before not in switches and not _is_number(before)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
