"""Env names ``dmc/<domain>-<task>``: every dm_control suite task, and a name parsed back with close matches.

Below both ``registry`` (which builds the envs) and ``validation`` (which checks an env_config by its task).
"""

from __future__ import annotations

import difflib
import re

from dm_control import suite

PREFIX = "dmc/"
_LIST_HINT = "(all DMC tasks: python -m smac_rllib.envs --list)"


def env_names() -> list[str]:
    """Every suite task as ``dmc/<domain>-<task>`` (dm_control's ``ALL_TASKS`` order)."""
    return [f"{PREFIX}{domain}-{task}" for domain, task in suite.ALL_TASKS]


def respelled(name: str) -> str | None:
    """The ``dmc/<domain>-<task>`` a name means when written with other separators, as other tools spell tasks:
    ``dmc.cartpole-swingup``, ``dmc.cartpole.swingup``, ``dm_control/cartpole/swingup``, ``dmc:Cartpole-Swingup``
    or ``cartpole.swingup`` -> ``dmc/cartpole-swingup``; None when it names no task (or is already spelled right)."""
    match = re.fullmatch(r"(?:(?:dmc|dm_control|dm-control)[./:_-])?(.+)", name, flags=re.I)
    if not match:
        return None
    squashed = re.sub(r"[^a-z0-9]", "", match.group(1).lower())
    found = [f"{PREFIX}{d}-{t}" for d, t in suite.ALL_TASKS if re.sub(r"[^a-z0-9]", "", d + t) == squashed]
    return found[0] if len(found) == 1 and found[0] != name else None


def parse_env_name(name: str) -> tuple[str, str]:
    """``"dmc/cheetah-run"`` (prefix optional) -> ``("cheetah", "run")``; unknown names raise with close matches."""
    body = name[len(PREFIX) :] if name.startswith(PREFIX) else name
    domain, _, task = body.partition("-")
    if (domain, task) in suite.ALL_TASKS:
        return domain, task
    spelled = respelled(name)
    if spelled:
        raise ValueError(f"unknown env {name!r}; did you mean {spelled}? (DMC tasks are named dmc/<domain>-<task>)")
    names = env_names()
    domain_tasks = [f"{PREFIX}{d}-{t}" for d, t in suite.ALL_TASKS if d == domain]
    if domain_tasks:  # known domain, unknown task: suggest that domain's tasks, closest first
        matches = difflib.get_close_matches(f"{PREFIX}{body}", domain_tasks, n=3, cutoff=0.0)
    else:  # compare without the shared prefix, or everything looks alike
        bodies = difflib.get_close_matches(body, [n[len(PREFIX) :] for n in names], n=3, cutoff=0.6)
        matches = [f"{PREFIX}{b}" for b in bodies]
    hint = f"did you mean {' or '.join(matches)}? " if matches else ""
    raise ValueError(f"unknown env {name!r}; {hint}{_LIST_HINT}")
