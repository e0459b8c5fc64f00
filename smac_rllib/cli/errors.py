"""``UserError``: a mistake the user can fix. ``rllib`` prints it as one line naming the fix and exits with 2. Also the
exit codes, warnings (``warn``) and the ``--resume`` command every message that continues a run names."""

from __future__ import annotations

import difflib
import re
import shlex
import sys
from typing import Any

PROG = "rllib"
EXIT_USER_ERROR = 2  # argparse's code for usage errors
EXIT_TRIAL_ERROR = 1  # a trial failed while running (not a configuration mistake)
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, what a shell reports for a process that Ctrl-C ended


class UserError(Exception):
    """A configuration or usage mistake. The message is one line and says what to change.

    ``where`` is a location prefix such as ``"tuned_examples/x.yaml:12"``.
    """

    def __init__(self, message: str, where: str | None = None):
        message = user_names(" ".join(str(message).split()))  # always one line, in the user's names
        super().__init__(f"{where}: {message}" if where else message)


# Attributes the loader files a user's key under (the YAML's `model_config:` is AlgorithmConfig._model_config):
# every message names the key as the user writes it.
_INTERNAL_NAMES = {"_model_config": "model_config"}
_INTERNAL = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, _INTERNAL_NAMES)) + r")(?!\w)")


def user_names(message: str) -> str:
    """``message`` with the loader's internal key names (``_model_config``) as the user writes them."""
    return _INTERNAL.sub(lambda m: _INTERNAL_NAMES[m.group(1)], message)


def one_line(text: object, limit: int = 400) -> str:
    """The first meaningful line of an exception message (RLlib messages can span many lines), shortened."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    line = " ".join(lines[:3]) if lines else str(text)
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def yaml_number(value: float) -> str:
    """``500000``, ``2.5``: a number as the YAML would write it."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def did_you_mean(key: Any, choices, cutoff: float = 0.6) -> str:
    """``; did you mean 'x'?`` for the same words in another order (``lr_actor``: actor_lr) or a close spelling."""
    names = [str(c) for c in choices]
    words = sorted(str(key).lower().split("_"))
    close = [n for n in names if len(words) > 1 and sorted(n.lower().split("_")) == words]
    close = close or difflib.get_close_matches(str(key), names, n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return type(value).__name__


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    """What the command read differently from how it was written (an older name), said on stderr."""
    print(f"{PROG}: note: {message}", file=sys.stderr, flush=True)


def resume_command(args) -> str:
    """The command that continues this ``rllib train file`` run: the user's own arguments plus ``--resume``."""
    argv = [a for a in getattr(args, "argv", None) or ["train", "file", args.path] if a != "--dry-run"]
    if "--resume" not in argv:
        argv.append("--resume")
    return shlex.join([PROG, *argv])
