"""benchmarks/pixel_learning_cpu.py's summary (the CPU pixel regression check): evaluations read from Tune's
result.json lines at the evaluation iterations only, frames = agent steps x action repeat, and the bar (last >= 3x the
first and > 500) decided per run."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import pixel_learning_cpu as plc  # noqa: E402


def _write_run(out: Path, algo: str, seed: int, evals: list[float]) -> None:
    trial = out / "pixel_learning_runs" / "cartpole-swingup" / f"{algo}_s{seed}" / "exp" / "trial"
    trial.mkdir(parents=True)
    with open(trial / "result.json", "w") as f:
        for it in range(1, 2 * len(evals) + 1):  # evaluation every 2 iterations; the others repeat the last one
            value = evals[(it - 1) // 2] if it >= 2 else None
            result = {
                "training_iteration": it,
                "time_total_s": 10.0 * it,
                "env_runners": {"num_env_steps_sampled_lifetime": 500 * it},
            }
            if value is not None:
                result["evaluation"] = {"env_runners": {"episode_return_mean": value, "num_episodes_lifetime": 5}}
            f.write(json.dumps(result) + "\n")


def test_summary_reads_evaluations_and_decides_the_bar(tmp_path):
    _write_run(tmp_path, "SMAC", 0, [10.0, 200.0, 620.0])
    _write_run(tmp_path, "LatentSAC", 0, [10.0, 20.0, 25.0])
    rows = plc.curves(tmp_path, "cartpole-swingup", action_repeat=8, eval_every=2)
    assert [(r["algo"], r["frames"], r["eval_return"]) for r in rows] == [
        ("SMAC", 8000, 10.0),
        ("SMAC", 16000, 200.0),
        ("SMAC", 24000, 620.0),
        ("LatentSAC", 8000, 10.0),
        ("LatentSAC", 16000, 20.0),
        ("LatentSAC", 24000, 25.0),
    ]
    plc.summarize(
        rows, tmp_path, "cartpole-swingup", ROOT / "tuned_examples" / "smac_pixels_learns.yaml", {"time_total_s": 3600}
    )
    written = list(csv.DictReader(open(tmp_path / "pixel_learning_cartpole_swingup.csv")))
    assert list(written[0]) == ["algo", "seed", "frames", "eval_return"] and len(written) == 6
    md = (tmp_path / "pixel_learning_cartpole_swingup.md").read_text()
    assert "| SMAC | 0 | 3 | 10.0 (8000) | 620.0 (24000) | 620.0 | 62.0 | yes |" in md
    assert "| LatentSAC | 0 | 3 | 10.0 (8000) | 25.0 (24000) | 25.0 | 2.5 | no |" in md
    assert (tmp_path / "pixel_learning_cartpole_swingup.png").stat().st_size > 1000
    assert plc.finished(tmp_path / "pixel_learning_runs" / "cartpole-swingup" / "SMAC_s0", {"training_iteration": 6})
    assert not plc.finished(
        tmp_path / "pixel_learning_runs" / "cartpole-swingup" / "SMAC_s0", {"training_iteration": 7}
    )


def test_gpu_learning_window_rows_and_summary(tmp_path):
    """benchmarks/gpu_learning_window.py's learning.csv rows (the card and wall time beside each evaluation) and its
    summary: frames reached and frames per second of the whole run."""
    import gpu_learning_window as glw

    _write_run(tmp_path, "SMAC", 0, [10.0, 200.0])
    run = tmp_path / "pixel_learning_runs" / "cartpole-swingup" / "SMAC_s0"
    rows = glw.learning_rows(run, "SMAC", 0, action_repeat=2, eval_every=2, card="NVIDIA H100 80GB HBM3")
    assert [(r["frames"], r["eval_return"], r["card"], r["wall_s"]) for r in rows] == [
        (2000, 10.0, "NVIDIA H100 80GB HBM3", 20.0),
        (4000, 200.0, "NVIDIA H100 80GB HBM3", 40.0),
    ]
    facts = glw.summary(run, action_repeat=2)
    assert facts["frames"] == 4000 and facts["wall_s"] == 40.0 and facts["frames_per_s"] == 100.0
