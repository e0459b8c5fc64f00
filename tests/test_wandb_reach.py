"""The W&B server probe before a run logs online: which server it asks, that it sends nothing, that it gives up in
time when the name lookup or the connection hangs, and which runs it leaves alone (a reachable server, offline or
disabled logging). tests/test_wandb_offline.py has the closed port, the unknown host and the summary line. No network
is needed: local sockets stand in."""

from __future__ import annotations

import socket
import time

import pytest

from smac_rllib.cli import wandb_logging
from smac_rllib.cli.yaml_loader import load_experiments
from tests.test_mistakes import exp


@pytest.fixture(autouse=True)
def _fresh_probe():
    wandb_logging.unreachable.cache_clear()  # the probe's answers are kept for the process
    yield
    wandb_logging.unreachable.cache_clear()


def _spec(tmp_path, wandb_block: str = "wandb: {project: p}"):
    path = tmp_path / "w.yaml"
    path.write_text(exp(wandb_block))
    (spec,) = load_experiments(str(path))
    return spec


@pytest.mark.parametrize(
    "url, server",
    [
        (None, ("api.wandb.ai", 443)),
        ("", ("api.wandb.ai", 443)),
        ("https://wandb.example.org", ("wandb.example.org", 443)),
        ("http://wandb.example.org", ("wandb.example.org", 80)),
        ("https://wandb.example.org:8443/", ("wandb.example.org", 8443)),
        ("wandb.example.org:8080", ("wandb.example.org", 8080)),
    ],
)
def test_the_probe_asks_wandb_base_url_or_the_public_server(monkeypatch, url, server):
    if url is None:
        monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("WANDB_BASE_URL", url)
    assert wandb_logging.wandb_server() == server


def test_the_probe_opens_a_connection_and_sends_nothing():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert wandb_logging.unreachable("127.0.0.1", server.getsockname()[1]) is None
        conn, _ = server.accept()
        with conn:
            conn.settimeout(2.0)
            assert conn.recv(1) == b""  # closed by the probe, no byte sent


def test_a_hanging_lookup_is_given_up_on_in_time(monkeypatch):
    def hang(*args, **kwargs):
        time.sleep(5)
        raise OSError("too late")

    monkeypatch.setattr(wandb_logging.socket, "create_connection", hang)
    start = time.monotonic()
    why = wandb_logging.unreachable("api.wandb.ai", 443, 0.5)
    assert time.monotonic() - start < 2
    assert why == "no answer in 0.5 s"


def test_an_unknown_host_is_unreachable_within_the_default_limit():
    start = time.monotonic()
    assert wandb_logging.unreachable("nohost.invalid", 443)
    assert time.monotonic() - start < 5


def test_a_reachable_server_keeps_the_run_online_without_a_warning(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert wandb_logging.wandb_callback(_spec(tmp_path)).kwargs["mode"] == "online"
    assert not capfd.readouterr().err


def test_the_warning_is_one_line_with_the_reason_and_the_sync_command(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    monkeypatch.setattr(wandb_logging, "unreachable", lambda host, port: "Name or service not known")
    assert wandb_logging.wandb_callback(_spec(tmp_path)).kwargs["mode"] == "offline"
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rllib: warning: W&B: cannot reach api.wandb.ai:443 (Name or ")
    assert "logging offline" in err and "`wandb sync " in err


@pytest.mark.parametrize(
    "env_mode, block",
    [
        ("disabled", "wandb: {project: p}"),
        ("offline", "wandb: {project: p}"),
        (None, "wandb: {project: p, mode: offline}"),
        (None, "wandb: {project: p, mode: disabled}"),
    ],
)
def test_offline_or_disabled_logging_is_not_probed(tmp_path, monkeypatch, capfd, env_mode, block):
    if env_mode is None:
        monkeypatch.delenv("WANDB_MODE", raising=False)
    else:
        monkeypatch.setenv("WANDB_MODE", env_mode)

    def probed(host, port):
        raise AssertionError("probed")

    monkeypatch.setattr(wandb_logging, "unreachable", probed)
    callback = wandb_logging.wandb_callback(_spec(tmp_path, block))
    assert callback.kwargs["mode"] == (env_mode or block.split("mode: ")[1].rstrip("}"))
    assert not capfd.readouterr().err
