"""The whole pixel update captured in one CUDA graph (docs/design.md §10), and the ``learner_capture`` switch.

Pure torch, no ray. ``GraphedUpdate`` wraps an *unchanged* update function -- ``PixelUpdate.step`` -- the way LeanRL
and TD-MPC2 wrap theirs: the eager step stays the reference (CI covers its math on the CPU), the graph replays the same
kernels. Forward, losses, the one backward, the non-finite flag, the foreach clips, the fused Adam steps (made
capturable; a non-finite update is skipped inside the graph by fused Adam's ``found_inf``), Polyak averaging and every
metric are captured; the noise is drawn inside the graph (a CUDA graph re-reads the Philox offset at each replay, so
every replay draws fresh numbers). Per update the host does three things: copy the batch into the static input buffers,
``replay()``, and copy the static metric vector out (before the next replay overwrites it: TorchRL's Dreamer trap).

Capture recipe (PyTorch's "whole-network capture"; NVIDIA's CUDA-graph guide for the pitfalls):
1. static input buffers on the device; 2. ``warmup`` updates on a side stream (Adam's state, cuBLAS handles, autocast);
their effect on the weights, moments and target critics is undone afterwards (a snapshot copied back in place), so
capturing costs no training; 3. gradients set to None before capture, never between replays; 4. capture in
``thread_local`` mode (the staging thread's own CUDA calls do not break it; it must not allocate pinned memory while a
capture runs, see ``AsyncLearnerMixin``); 5. one static metric vector.

Re-capture (``invalidate()``) after anything that replaces tensors the graph points at: an optimizer's
``load_state_dict`` (a learner's ``set_state``, a restore from a checkpoint), ``.to()``, a learning-rate change (the lr
is baked into the captured fused Adam). ``param.copy_`` (weight syncs, ``load_state_dict`` of a module) keeps addresses
and needs none.
"""

from __future__ import annotations

import contextlib
from typing import Callable

import torch

from smac_rllib.objectives.pixel_update import autocast_cache_off

CAPTURE_MODES = ("auto", "off", "graph", "graph+compile")

# What ``auto`` resolves to on a CUDA learner: the fastest mode measured equal to eager on a device (docs/gpu.md,
# benchmarks/gpu_graph.py). Measured on an H200 (benchmarks/results/gpu/session7/): the graph is 3.3-4.9x the eager
# update at paper size and 2.85x live, and differs from eager by less than rounding alone does (strict fp32, checks
# (b) vs (f)); compile is not the default (its first update takes minutes).
AUTO_ON_CUDA = "graph"


class CaptureUnavailable(ValueError):
    """A ``learner_capture`` mode this learner cannot run; the message is one line that names the fix."""


def resolve_capture(
    mode: str, device: torch.device, *, autocast: str | None = None, num_learners: int = 0, eager_only: bool = False
) -> str:
    """``learner_capture`` -> the mode this learner runs: ``"off"`` (eager), ``"graph"`` or ``"graph+compile"``.

    ``auto``: ``AUTO_ON_CUDA`` on a CUDA learner, eager on the CPU, with fp16, several DDP learners or ``eager_only``
    (the learner's settings that a graph cannot honour: an lr schedule, targets averaged every N steps; the learner
    refuses them beside an explicit graph mode). An explicit graph mode that cannot run here raises
    ``CaptureUnavailable`` with the fix (a CPU learner, fp16's GradScaler, several DDP learners)."""
    if mode not in CAPTURE_MODES:
        raise CaptureUnavailable(f"learner_capture={mode!r} is unknown; use one of {list(CAPTURE_MODES)}")
    if mode == "auto":
        mode = AUTO_ON_CUDA if device.type == "cuda" else "off"
        if mode != "off" and (autocast == "fp16" or num_learners > 1 or eager_only):
            mode = "off"
        return mode
    if mode == "off":
        return mode
    if device.type != "cuda":
        raise CaptureUnavailable(
            f"learner_capture={mode!r} needs a CUDA learner (this one is on {device.type}); "
            "use 'auto' or 'off' (eager) on the CPU"
        )
    if autocast == "fp16":
        raise CaptureUnavailable(
            f"learner_capture={mode!r} does not capture fp16's GradScaler; use autocast 'bf16' or "
            "'auto', or learner_capture 'off'"
        )
    if num_learners > 1:
        raise CaptureUnavailable(
            f"learner_capture={mode!r} runs one learner (DDP all-reduces outside the graph); set "
            "num_learners <= 1 or learner_capture 'off'"
        )
    return mode


def compile_rssm_step(rssm, *, dynamic: bool = False):
    """Inductor-compile the RSSM's posterior step alone (docs/design.md §10: regional compile, ``dynamic=False``, mode
    ``default`` -- the graph is ours, not ``reduce-overhead``'s). The unrolled loop is left to Python: T calls of one
    compiled step, two shapes (B rows with gradients, K*B without)."""
    if not getattr(rssm, "_posterior_step_compiled", False):  # once per module, however often a graph is rebuilt
        rssm.posterior_step = torch.compile(rssm.posterior_step, dynamic=dynamic, fullgraph=True)
        rssm._posterior_step_compiled = True
    return rssm


class GraphedUpdate:
    """``step_fn(batch) -> {name: 0-d tensor or float}`` captured once, replayed per update.

    ``state_tensors`` are every tensor the step mutates (parameters, target parameters, optimizer state): their values
    are saved before the warm-up and copied back after the capture. ``step`` returns the metrics as views into this
    update's own copy of the metric vector (floats stay floats)."""

    def __init__(
        self,
        step_fn: Callable[[dict], dict],
        example_batch: dict[str, torch.Tensor],
        *,
        optimizers: list[torch.optim.Optimizer],
        state_tensors: Callable[[], list[torch.Tensor]],
        warmup: int = 3,
        use_graph: bool = True,
        capture_guard=None,
    ):
        self.step_fn, self.optimizers, self.state_tensors, self.warmup = step_fn, optimizers, state_tensors, warmup
        self.use_graph = use_graph  # False: the same static buffers and metric vector, the step run eagerly (CPU tests)
        self.capture_guard = capture_guard or contextlib.nullcontext()  # a lock other threads' pinned copies take
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_batch = {k: v.clone() for k, v in example_batch.items()}
        self.captures = 0

    def fits(self, batch: dict[str, torch.Tensor]) -> bool:
        """The batch has the captured shapes, dtypes and device (a graph replays fixed shapes only)."""
        return all(
            k in batch and batch[k].shape == v.shape and batch[k].dtype == v.dtype and batch[k].device == v.device
            for k, v in self.static_batch.items()
        )

    def invalidate(self) -> None:
        """Forget the graph (see the module doc for when); the next ``step`` captures again."""
        self.graph = None

    def _capture(self) -> None:
        for optimizer in self.optimizers:  # fused + capturable: the step counters stay on the device inside the graph
            for group in optimizer.param_groups:
                group["capturable"] = True
        saved = [t.detach().clone() for t in self.state_tensors()]  # the warm-up's updates are undone after capture
        saved_moments = [
            {p: {k: v.clone() for k, v in st.items()} for p, st in o.state.items()} for o in self.optimizers
        ]
        try:
            with autocast_cache_off():  # warm-up and capture run the same code (no cast cache in either)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(self.warmup):
                        self.step_fn(self.static_batch)
                torch.cuda.current_stream().wait_stream(side)
                for optimizer in self.optimizers:
                    optimizer.zero_grad(
                        set_to_none=True
                    )  # backward inside the graph allocates the gradients in its pool
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                    self.static_metrics = self._metric_vector(self.step_fn(self.static_batch))
        finally:  # captured or not: weights, target critics, Adam's moments and step counters as before the warm-up
            with torch.no_grad():
                for tensor, value in zip(self.state_tensors(), saved, strict=True):
                    tensor.copy_(value)
                for optimizer, before in zip(self.optimizers, saved_moments, strict=True):
                    for param, state in optimizer.state.items():
                        for key, tensor in state.items():
                            if torch.is_tensor(tensor):
                                tensor.copy_(
                                    before[param][key]
                                ) if param in before else tensor.zero_()  # fresh Adam: zeros
        self.graph = graph
        self.captures += 1

    def _metric_vector(self, metrics: dict) -> torch.Tensor:
        """The step's tensor metrics stacked into one vector (their names kept), its float constants kept aside."""
        self.names = [k for k, v in metrics.items() if torch.is_tensor(v)]
        self.constants = {k: v for k, v in metrics.items() if not torch.is_tensor(v)}
        return torch.stack([metrics[k].detach().float().reshape(()) for k in self.names])

    def step(self, batch: dict[str, torch.Tensor]) -> dict:
        for name, static in self.static_batch.items():
            static.copy_(batch[name], non_blocking=True)
        if not self.use_graph:
            vector = self._metric_vector(self.step_fn(self.static_batch))
            return dict(zip(self.names, vector.unbind(), strict=True)) | self.constants
        if self.graph is None:
            with self.capture_guard:
                self._capture()
        self.graph.replay()
        vector = self.static_metrics.clone()  # out of the graph's output before the next replay overwrites it
        return dict(zip(self.names, vector.unbind(), strict=True)) | self.constants
