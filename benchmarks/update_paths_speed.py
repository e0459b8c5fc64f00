"""The update paths timed side by side in one process, interleaved (CPU, one torch thread).

    python benchmarks/update_paths_speed.py                          # state K = 0 8 32, pixel K = 0 8, 5 rounds
    python benchmarks/update_paths_speed.py --cases pixel --ks 8 --rounds 3 --updates 6
    python benchmarks/update_paths_speed.py --smoke      # does it run (tiny, 1 round; writes /tmp/update_paths_smoke)

``benchmarks/one_update_speed.py`` times each version in its own subprocess; its spread between processes (~±20%)
was larger than the effects it looked for. Here every variant of a case lives in one process, each with its own
module and optimizers (built from one config, the same starting weights), and the variants take turns: in each round
every variant runs ``--updates`` updates in a row (the median kept), the order rotated from round to round, so a
machine's slow drifts hit all of them. What to read: each variant's time over the learner's, per round and the
median of rounds.

Variants (one batch, fixed, reused every update; ``timesteps`` fixed; noise from the global torch RNG):

- ``learner``: the learner a run builds (``config.build_learner``: ``StepLearnerMixin``'s shell running
  ``StateUpdate.step`` / ``PixelUpdate.step``), timed through ``learner.update(batch=MultiAgentBatch of numpy
  columns, timesteps=...)``: the numpy -> tensor columns, the step, target-update counting, the device metrics and
  ``metrics.reduce()``.
- ``rllib``: RLlib's own update path with SMAC's loss as the oracle (``tests/test_smac_components.py:
  RLlibOracleLearner`` for states, ``tests/test_pixel_update.py: PixelRLlibOracle`` for pixels: ``SACTorchLearner``
  subclasses set as the config's learner class): ``Learner.update``'s batch handling, ``TorchLearner``'s forward,
  ``compute_gradients`` / ``postprocess_gradients`` / ``apply_gradients``, ``DQNLearner``'s Polyak averaging, RLlib's
  ``MetricsLogger``. Same call as ``learner``.
- ``step``: the update function alone, ``learner.make_update(module_id).step(columns)`` on a learner's own module and
  optimizers, the batch already torch tensors: no RLlib shell, no metrics reduce.
- pixels only, ``step+compile``: the same step with the RSSM's posterior step compiled by inductor
  (``captured_update.compile_rssm_step``: the project's regional compile, ``dynamic=False``, ``fullgraph=True``,
  applied to this variant's module only). Its first update (compiling the two shapes: B rows with gradients, K*B
  without) is outside the timed rounds; its seconds are in the ``first_update_s`` column (they depend on inductor's
  on-disk cache, /tmp/torchinductor_$USER: cold 110 s, warm 6 s at the tiny preset on the 2-core dev machine).
  Compiling the whole training forward instead (``torch.compile(pixel_update.forward_train)``, as
  ``benchmarks/gpu_learner.py`` does) does not work on the CPU with torch 2.13: a graph break at ``autocast``'s
  ``ContextVar.get`` (``pixel_forward.py``) leaves a resume function whose guard holds the per-call autocast object,
  so it recompiles at every update (~25 s each at the tiny preset) until dynamo's recompile limit; and its noise
  (``UpdateNoise.draw``) falls inside the compiled graph, drawn by inductor's RNG, not eager's (most likely why its
  weights were 1.2e-3 off eager after one update).
- pixels only, ``step bf16``: the same step on a learner built with ``autocast="bf16"`` (``PixelSettings.autocast``:
  the world model and the particle re-filter under CPU bf16 autocast).

Before timing, once per case: from identical weights and the same seed, one update of every variant; the max abs
difference of every module tensor from the ``learner``'s after that update (fp32 variants: also ``allclose`` at
rtol = atol = 1e-5; compile and bf16: informative). Writes ``update_paths_speed.{csv,md}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # smac_rllib and the tests package (the oracle learners)
sys.path.insert(0, str(ROOT / "benchmarks"))  # benchmarks/report.py

import numpy as np  # noqa: E402
import torch  # noqa: E402

from report import write_csv, write_page  # noqa: E402

MODULE = "default_policy"  # ray.rllib.core.DEFAULT_MODULE_ID (imported lazily with ray)
TIMESTEPS = {"num_env_steps_sampled_lifetime": 10_000}
FP32_VARIANTS = ("learner", "rllib", "step")
DEFAULT_KS = {"state": [0, 8, 32], "pixel": [0, 8]}
RTOL = ATOL = 1e-5


# ------------------------------------------------------------------------------------------------ configs, batches
def state_setup(k: int, args):
    import gymnasium as gym

    from smac_rllib.algorithms import SMACConfig

    obs, act = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-1, 1, (1,), np.float32)

    def config(**extra):
        return (
            SMACConfig()
            .environment(observation_space=obs, action_space=act)
            .training(
                num_particles=k,
                train_batch_size_per_learner=args.state_batch,
                latent_dim=16,
                hidden_dim=256,
                critic_hidden_dim=256,
                async_learning=False,
                **extra,
            )
        )

    rng, n = np.random.default_rng(0), args.state_batch
    data = {
        "obs": rng.normal(size=(n, 5)).astype(np.float32),
        "new_obs": rng.normal(size=(n, 5)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
        "rewards": rng.uniform(size=n).astype(np.float32),
        "terminateds": np.zeros(n, bool),
        "truncateds": np.zeros(n, bool),
    }
    return config, (obs, act), data, n


def pixel_setup(k: int, args):
    import gymnasium as gym

    from smac_rllib.algorithms import SMACConfig

    obs, act = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8), gym.spaces.Box(-1, 1, (1,), np.float32)
    B, T = args.pixel_B, args.pixel_T

    def config(**extra):
        return (
            SMACConfig()
            .environment(observation_space=obs, action_space=act, env_config={"from_pixels": True})
            .training(
                num_particles=k,
                particle_mode="history",
                world_model_preset=args.preset,
                batch_size_B=B,
                batch_length_T=T,
                async_learning=False,
                **extra,
            )
        )

    rng = np.random.default_rng(0)
    is_first = np.zeros((B, T), bool)
    is_first[:, 0] = True
    data = {
        "obs": rng.integers(0, 255, (B, T, 64, 64, 3), dtype=np.uint8),
        "actions": rng.uniform(-1, 1, (B, T, 1)).astype(np.float32),
        "rewards": rng.uniform(size=(B, T)).astype(np.float32),
        "is_first": is_first,
        "is_terminated": np.zeros((B, T), bool),
    }
    return config, (obs, act), data, B * T


# ------------------------------------------------------------------------------------------------ the variants
def build_variants(case: str, k: int, args, fp32_only: bool = False) -> tuple[dict, dict]:
    """{variant: (learner that owns its weights, callable running one update)}, {variant: error} for those that could
    not be built (``fp32_only``: ``FP32_VARIANTS`` only). Every learner starts from the ``learner`` variant's weights
    (fresh Adam state everywhere)."""
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    from smac_rllib.training.fast_update.captured_update import compile_rssm_step

    if case == "state":
        from tests.test_smac_components import RLlibOracleLearner as Oracle
    else:
        from tests.test_pixel_update import PixelRLlibOracle as Oracle

    config, (obs, act), data, env_steps = (state_setup if case == "state" else pixel_setup)(k, args)
    spaces = {"__env__": (obs, act), MODULE: (obs, act)}
    columns = {name: torch.from_numpy(v) for name, v in data.items()}
    torch.manual_seed(0)
    reference = config().build_learner(spaces=spaces)
    weights = reference.module[MODULE].state_dict()

    def built(learner_config, oracle=False):
        if oracle:
            learner_config._learner_class = Oracle
        learner = learner_config.build_learner(spaces=spaces)
        learner.module[MODULE].load_state_dict(weights)
        return learner

    def through_update(learner):
        batch = MultiAgentBatch({MODULE: SampleBatch(dict(data))}, env_steps=env_steps)  # its own, as a replay's
        return lambda: learner.update(batch=batch, timesteps=TIMESTEPS)

    def step_of(learner):
        learner.module[MODULE].unwrapped().train()
        update = learner.make_update(MODULE)
        return lambda: update.step(columns)

    variants, errors = {"learner": (reference, through_update(reference))}, {}
    oracle = built(config(), oracle=True)
    assert type(oracle) is Oracle, type(oracle)
    variants["rllib"] = (oracle, through_update(oracle))
    plain = built(config())
    variants["step"] = (plain, step_of(plain))
    if case == "pixel" and not fp32_only:
        name = "step+compile"
        try:
            torch._dynamo.reset()  # each case's compiled step starts with dynamo's cache (and recompile count) empty
            compiled = built(config())
            compile_rssm_step(compiled.module[MODULE].unwrapped().world_model.rssm)
            variants[name] = (compiled, step_of(compiled))
        except Exception as e:  # noqa: BLE001 -- a variant that cannot run is a result too
            errors[name] = _error(e)
        name = "step bf16"
        try:
            bf16 = built(config(autocast="bf16"))
            assert bf16.module[MODULE].unwrapped().settings.autocast == "bf16"
            variants[name] = (bf16, step_of(bf16))
        except Exception as e:  # noqa: BLE001
            errors[name] = _error(e)
    return variants, errors


def _error(e: Exception) -> str:
    traceback.print_exc(limit=3)
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


def first_updates(variants: dict, errors: dict, seed: int = 1) -> dict:
    """One update of every variant from the same weights and seed: {variant: {first_update_s, max_abs_diff,
    allclose}} against the ``learner``'s weights after its update. A variant whose first update fails is dropped
    (its error kept)."""
    out = {}
    after = None
    start = {key: v.detach().clone() for key, v in variants["learner"][0].module[MODULE].state_dict().items()}
    for name in list(variants):
        learner, run = variants[name]
        torch.manual_seed(seed)
        t0 = time.perf_counter()
        try:
            run()
        except Exception as e:  # noqa: BLE001
            errors[name] = _error(e)
            del variants[name]
            continue
        seconds = time.perf_counter() - t0
        state = {key: v.detach().clone() for key, v in learner.module[MODULE].state_dict().items()}
        if after is None:
            after = state
        diff, moved, close = 0.0, 0.0, True
        for key, value in after.items():
            if not value.is_floating_point() or not value.numel():
                continue
            other = state[key].to(value.dtype)
            diff = max(diff, float((other - value).abs().max()))
            moved = max(moved, float((other - start[key]).abs().max()))
            close = close and torch.allclose(other, value, rtol=RTOL, atol=ATOL)
        out[name] = {"first_update_s": seconds, "max_abs_diff": diff, "max_abs_change": moved, "allclose": close}
        print(
            f"  first update {name}: {seconds:.3f} s, max |w - w_learner| = {diff:.2e} "
            f"(max |w - w_start| = {moved:.2e}), allclose {close}",
            flush=True,
        )
    return out


def time_block(run, n: int) -> float:
    """Median seconds of ``n`` consecutive updates."""
    gc.collect()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_case(case: str, k: int, args) -> list[dict]:
    print(f"{case} K={k}: building", flush=True)
    variants, errors = build_variants(case, k, args)
    checks = first_updates(variants, errors)
    warm = {}
    for name, (_, run) in variants.items():
        t0 = time.perf_counter()
        for _ in range(args.warmup):
            run()
        warm[name] = (time.perf_counter() - t0) / max(args.warmup, 1)
    names = list(variants)
    timings = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            timings[name].append(time_block(variants[name][1], args.updates))
        print(f"  round {r}: " + ", ".join(f"{n} {timings[n][-1]:.4f}" for n in names), flush=True)
    rows = []
    for name in names + [n for n in errors if n not in names]:
        check = checks.get(name, {})
        base = {
            "case": case,
            "K": k,
            "variant": name,
            "first_update_s": round(check["first_update_s"], 4) if check else "",
            "warmup_s_per_update": round(warm[name], 5) if name in warm else "",
            "max_abs_diff_vs_learner": f"{check['max_abs_diff']:.3e}" if check else "",
            "max_abs_change": f"{check['max_abs_change']:.3e}" if check else "",
            "allclose_vs_learner": check.get("allclose", ""),
            "error": errors.get(name, ""),
        }
        if name not in timings:
            rows.append(base | {"round": "", "s_per_update": "", "over_learner": "", "step_over_this": ""})
            continue
        for r, seconds in enumerate(timings[name]):
            rows.append(
                base
                | {
                    "round": r,
                    "s_per_update": round(seconds, 6),
                    "over_learner": round(seconds / timings["learner"][r], 4),
                    "step_over_this": round(timings["step"][r] / seconds, 4) if "step" in timings else "",
                }
            )
    del variants
    gc.collect()
    return rows


# ------------------------------------------------------------------------------------------------ the page
def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.strip().lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or platform.machine()


def cpu_bf16_flags() -> str:
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    found = sorted(f for f in ("avx512_bf16", "amx_bf16", "amx_tile") if f in flags)
    return ", ".join(found) if found else "none (no avx512_bf16 / amx_bf16)"


VARIANT_TEXT = {
    "learner": "`config.build_learner(...)` (the one update in `StepLearnerMixin`'s shell), "
    "`learner.update(batch=...)`",
    "rllib": "RLlib's own `TorchLearner` update path with SMAC's loss (the tests' oracle learner), `learner.update`",
    "step": "`learner.make_update(module_id).step(columns)`: the update function alone, tensors in, no shell",
    "step+compile": "the step with the RSSM posterior step compiled by inductor (`compile_rssm_step`); its first "
    "update (compiling; its time depends on inductor's on-disk cache) outside the rounds",
    "step bf16": "the step on a learner with `autocast: bf16` (world model and particle re-filter in CPU bf16)",
}


def write_markdown(rows: list[dict], args, path: Path) -> None:
    import ray

    command = "python benchmarks/update_paths_speed.py " + " ".join(args.argv)
    variant_lines = [f"- `{name}`: {text}" for name, text in VARIANT_TEXT.items()]
    lines = [
        "# Update paths side by side in one process, interleaved (CPU, one torch thread)",
        "",
        f"Command: `{command}`"
        + (" (**smoke run: sizes and counts too small to read timings from**)" if args.smoke else ""),
        "",
        f"CPU: {cpu_model()}; bf16 flags: {cpu_bf16_flags()}; torch {torch.__version__} "
        f"(capability {torch.backends.cpu.get_cpu_capability()}), ray {ray.__version__}, "
        f"{torch.get_num_threads()} torch thread. State: batch {args.state_batch}, obs dim 5, action dim 1, width 256, "
        f"latent 16. Pixels: preset `{args.preset}`, B x T {args.pixel_B} x {args.pixel_T}, history particles, "
        f"action dim 1. {args.warmup} warm-up updates, then {args.rounds} rounds; per round each variant runs "
        f"{args.updates} updates in a row (median kept), the order rotated each round.",
        "",
        "Variants (each its own learner, module and optimizers, from the same weights):",
        "",
        *variant_lines,
        "",
        "Ratios: `variant / learner` = the variant's s/update over the learner's in the same round (> 1: the learner "
        "is faster; the issue's target is rllib / learner >= 1.0, and step / learner near 1 = a cheap shell); "
        "`step / variant` = the eager step's over the variant's (> 1: compile or bf16 is faster).",
        "",
        "## One update from the same weights and seed",
        "",
        f"Max abs difference of the module's tensors (weights, target critics) from the learner's after one update; "
        f"allclose at rtol = atol = {RTOL:g}: expected True for the fp32 paths (learner, rllib, step); for compile and "
        "bf16 the difference is informative. "
        "max abs change = the variant's own largest weight change in that update (the comparison is not vacuous); "
        "first update = that update's seconds (compile's compiling included); warm-up = s/update of the "
        f"{args.warmup} updates after it.",
        "",
        "| case | K | variant | max abs diff | allclose | max abs change from start | first update s | "
        "warm-up s/update | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    seen = set()
    for r in rows:
        key = (r["case"], r["K"], r["variant"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(
            f"| {r['case']} | {r['K']} | {r['variant']} | {r['max_abs_diff_vs_learner']} | {r['allclose_vs_learner']} "
            f"| {r['max_abs_change']} | {r['first_update_s']} | {r['warmup_s_per_update']} | {r['error']} |"
        )
    lines += [
        "",
        "## Seconds per update",
        "",
        "| case | K | variant | s/update (median of rounds) | variant / learner per round | median | "
        "step / variant per round | median |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case, k, name in dict.fromkeys((r["case"], r["K"], r["variant"]) for r in rows):
        rs = [r for r in rows if (r["case"], r["K"], r["variant"]) == (case, k, name) and r["round"] != ""]
        if not rs:
            continue
        over = [r["over_learner"] for r in rs]
        step = [r["step_over_this"] for r in rs if r["step_over_this"] != ""]
        lines.append(
            f"| {case} | {k} | {name} | {statistics.median(r['s_per_update'] for r in rs):.5f} | "
            + ", ".join(f"{x:.3f}" for x in over)
            + f" | **{statistics.median(over):.3f}** | "
            + ", ".join(f"{x:.3f}" for x in step)
            + (f" | {statistics.median(step):.3f} |" if step else " | |")
        )
    write_page(path, "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=["state", "pixel"], choices=["state", "pixel"])
    p.add_argument("--ks", nargs="+", type=int, help="K values for every case (default: state 0 8 32, pixel 0 8)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--updates", type=int, default=10, help="updates per variant per round (their median is kept)")
    p.add_argument("--warmup", type=int, default=3, help="updates per variant after the first, before the rounds")
    p.add_argument("--preset", default="small", help="pixel world model preset")
    p.add_argument("--pixel-bt", default="16x32", help="pixel batch B x T")
    p.add_argument("--state-batch", type=int, default=256)
    p.add_argument("--out", type=Path, help="default benchmarks/results; with --smoke /tmp/update_paths_smoke")
    p.add_argument("--smoke", action="store_true", help="1 round, 2 updates, 1 warm-up, pixel preset tiny at 4 x 8")
    args = p.parse_args(argv)
    args.argv = argv
    if args.smoke:
        args.rounds, args.updates, args.warmup, args.preset, args.pixel_bt = 1, 2, 1, "tiny", "4x8"
    if args.out is None:  # a smoke run's page stays out of the results (and out of git)
        args.out = Path("/tmp/update_paths_smoke") if args.smoke else ROOT / "benchmarks" / "results"
    args.pixel_B, args.pixel_T = (int(x) for x in args.pixel_bt.split("x"))
    torch.set_num_threads(1)
    import smac_rllib  # noqa: F401 -- sets MUJOCO_GL before anything imports dm_control

    rows = []
    for case in args.cases:
        for k in args.ks or DEFAULT_KS[case]:
            rows += run_case(case, k, args)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "update_paths_speed.csv")
    write_markdown(rows, args, args.out / "update_paths_speed.md")
    print(f"wrote {args.out}/update_paths_speed.{{csv,md}}")


if __name__ == "__main__":
    main()
