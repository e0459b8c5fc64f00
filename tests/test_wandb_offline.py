"""W&B when its server cannot be reached: the run logs offline (said once, with the command that uploads it later)
instead of retrying for the whole run and logging nothing. No network is needed: local sockets stand in."""

from __future__ import annotations

import os
import socket
import time

from smac_rllib.cli import wandb_logging
from smac_rllib.cli.yaml_loader import load_experiments
from tests.test_mistakes import exp


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_probe_tells_a_listening_server_from_a_closed_port_and_an_unknown_host():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert wandb_logging.unreachable("127.0.0.1", server.getsockname()[1]) is None
    assert "refused" in wandb_logging.unreachable("127.0.0.1", _closed_port()).lower()
    start = time.monotonic()
    assert wandb_logging.unreachable("nohost.invalid", 443, 2.0)
    assert time.monotonic() - start < 5


def test_an_unreachable_server_switches_the_run_to_offline_with_one_warning(tmp_path, monkeypatch, capfd):
    port = _closed_port()
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert wandb_logging.wandb_server() == ("127.0.0.1", port)
    path = tmp_path / "w.yaml"
    path.write_text(exp("wandb: {project: p}"))
    (spec,) = load_experiments(str(path))
    callback = wandb_logging.wandb_callback(spec)
    assert callback.kwargs["mode"] == "offline"
    err = capfd.readouterr().err
    assert err.count("warning") == 1 and f"W&B: cannot reach 127.0.0.1:{port}" in err and "wandb sync" in err
    monkeypatch.setenv("WANDB_MODE", "offline")  # asked for offline: no probe, no warning
    assert wandb_logging.wandb_callback(spec).kwargs["mode"] == "offline" and not capfd.readouterr().err


def test_the_summary_names_an_offline_run_and_how_to_upload_it(tmp_path):
    from smac_rllib.cli.summary import _run_facts

    (tmp_path / "wandb").mkdir()
    assert _run_facts({}, str(tmp_path), 1)["wandb"].endswith(f"W&B run    {tmp_path}/wandb")
    (tmp_path / "wandb" / "offline-run-20261128_210000-abc").mkdir()
    assert (
        f"(offline: upload with `wandb sync {tmp_path}/wandb/offline-run-*`)"
        in _run_facts({}, str(tmp_path), 1)["wandb"]
    )


def test_online_without_an_api_key_is_one_line_before_ray_and_offline_needs_none(tmp_path, monkeypatch):
    """WANDB_MODE=online with no key (no WANDB_API_KEY, no ~/.netrc entry): Ray's callback raised a traceback in
    Tune's setup; now one line before Ray. A run that logs offline (its own mode, or after an unreachable server)
    sets up without a key even though the environment says online."""
    import pytest

    from smac_rllib.cli.errors import UserError

    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no_netrc"))
    path = tmp_path / "w.yaml"
    path.write_text(exp("wandb: {project: p}"))
    (spec,) = load_experiments(str(path))
    with pytest.raises(UserError, match=r"W&B logs online \(WANDB_MODE=online\) but has no API key .*wandb login"):
        wandb_logging.check_api_key(spec)
    (tmp_path / "netrc").write_text("machine api.wandb.ai\n  login user\n  password k\n")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    wandb_logging.check_api_key(spec)  # logged in: fine
    monkeypatch.setenv("NETRC", str(tmp_path / "no_netrc"))
    path.write_text(exp("wandb: {project: p, mode: offline}"))
    (spec,) = load_experiments(str(path))
    wandb_logging.check_api_key(spec)
    callback = wandb_logging.wandb_callback(spec)
    callback.setup()  # Ray's own would raise "No WandB API key found"
    assert os.environ["WANDB_MODE"] == "online"  # the environment is left as it was
