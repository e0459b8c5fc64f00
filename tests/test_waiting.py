"""Nothing waits in silence (issue #37.3): what a trial waits for, said before Ray (a local Ray that can never place
it) or every minute (a cluster); a stop or score key that never comes ends the trial in one line; a long evaluation
shows progress. Pure functions here, no Ray; the one real run is in test_cli.py."""

from __future__ import annotations

from smac_rllib.cli.main import main

PPO = """\
ppo:
  run: PPO
  env: dmc/cartpole-balance
  stop: {training_iteration: 1}
  config:
    num_env_runners: 0
    train_batch_size: 200
    minibatch_size: 100
    num_epochs: 1
"""


def test_ppo_dry_run_passes_every_check(tmp_path, capfd):
    """``run: PPO`` (an RLlib algorithm without a replay buffer) goes through the memory check (#37.4)."""
    path = tmp_path / "ppo.yaml"
    path.write_text(PPO)
    code = main(["train", "file", str(path), "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0 and "Traceback" not in err, err
    assert "PPO on dmc/cartpole-balance" in out
