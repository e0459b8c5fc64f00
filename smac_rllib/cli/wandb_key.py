"""Where W&B's server is and whether ``wandb login`` stored a key for it: no Ray import, so ``main.py`` can ask
before Ray loads (it sets WANDB_MODE=offline when there is no key)."""

from __future__ import annotations

import os
import urllib.parse

WANDB_KEY_VAR = "WANDB_API_KEY"


def wandb_server() -> tuple[str, int]:
    """(host, port) of the W&B server: ``WANDB_BASE_URL`` (a self-hosted server) or api.wandb.ai:443."""
    url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    parsed = urllib.parse.urlparse(url if "://" in url else f"https://{url}")
    return parsed.hostname or "api.wandb.ai", parsed.port or (80 if parsed.scheme == "http" else 443)


def logged_in() -> bool:
    """``wandb login`` wrote a key for the W&B server (``WANDB_BASE_URL`` or api.wandb.ai) into ~/.netrc."""
    try:
        with open(os.environ.get("NETRC") or os.path.expanduser("~/.netrc"), encoding="utf-8") as f:
            return wandb_server()[0] in f.read()
    except OSError:
        return False


def has_key() -> bool:
    """An API key in the environment or stored by ``wandb login``."""
    return bool(os.environ.get(WANDB_KEY_VAR)) or logged_in()


def requested_mode(block: dict) -> str:
    """The W&B mode a run asks for: the YAML's ``wandb.mode``, else ``WANDB_MODE`` (W&B's own default: online)."""
    mode = block.get("mode") or os.environ.get("WANDB_MODE", "online")
    return "offline" if mode == "dryrun" else mode  # W&B's older name for offline


def user_dir() -> str | None:
    """``WANDB_DIR``, where the user asked W&B to write (``<WANDB_DIR>/wandb/<run>``); None: each trial's dir."""
    return os.path.abspath(os.path.expanduser(os.environ["WANDB_DIR"])) if os.environ.get("WANDB_DIR") else None


def runs_dir(trial_dir: str) -> str:
    """The directory that holds a trial's W&B runs (``offline-run-*``, ``run-*``)."""
    return os.path.join(user_dir() or trial_dir, "wandb")
