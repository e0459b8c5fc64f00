"""Ctrl-C during ``rllib train``: the first one lets every running trial finish its current iteration, checkpoints it
(replay buffer included) and ends the run with Tune's experiment state saved (the summary prints the ``--resume``
command, exit 130); the second stops at once. Tune's own SIGINT handler is off (``TUNE_DISABLE_SIGINT_HANDLER=1``).
"""

from __future__ import annotations

import logging
import os
import signal
import threading

from ray import tune
from ray.tune.experiment import Trial

from smac_rllib.cli.errors import warn
from smac_rllib.cli.progress import iteration_wait_estimate
from smac_rllib.cli.results import format_duration


class _Interrupt:
    """This process's Ctrl-C: set by the SIGINT handler (``catch_ctrl_c``), acted on by ``CheckpointOnInterrupt``
    in Tune's loop (the same main thread)."""

    def __init__(self):
        self.requested = False  # the first Ctrl-C came
        self.waiting: set[str] | None = None  # trials running at the first step after it, to checkpoint
        self.saved: set[str] = set()  # trials checkpointed since
        self.unfinished: set[str] | None = None  # paths of the trials left unfinished when the loop ended

    def reset(self):
        self.__init__()


INTERRUPT = _Interrupt()
CTRL_C_MESSAGE = (
    "\nrllib: Ctrl-C: checkpointing every running trial at the end of its current iteration, then "
    "stopping (press Ctrl-C again to stop at once, without those checkpoints)\n"
)


class catch_ctrl_c:  # noqa: N801 - a context manager, used as ``with catch_ctrl_c():``
    """Our SIGINT handler while experiments run: the first Ctrl-C sets ``INTERRUPT.requested``, the second raises
    KeyboardInterrupt (``main`` prints the resume command and exits 130). Tune must not install its own."""

    def __enter__(self):
        INTERRUPT.reset()
        os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"  # read by tune.run when it starts
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, _on_sigint)
        return INTERRUPT

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def _on_sigint(signum, frame):
    if INTERRUPT.requested:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        raise KeyboardInterrupt
    INTERRUPT.requested = True
    os.write(2, (CTRL_C_MESSAGE + _wait_hint()).encode())  # not print(): the main thread may be inside a write


def _wait_hint() -> str:
    """How long the first Ctrl-C waits: the current iterations' expected remaining time, from their last iteration."""
    left = iteration_wait_estimate()
    if left is None:
        return ""
    if left < 1.0:  # already longer than the last one (an async iteration samples until its step count is reached)
        return (
            "rllib: the current iteration already runs longer than the last one; it ends once its steps are sampled, "
            "then the checkpoints\n"
        )
    return (
        f"rllib: the current iteration should end in ~{format_duration(left)} (as long as the last one), then the "
        "checkpoints\n"
    )


class CheckpointOnInterrupt(tune.Callback):
    """After the first Ctrl-C: each running trial's next result is checkpointed (``should_checkpoint``, the same
    checkpoint as a periodic one: RLlib's, SMAC's replay buffer included); once every trial that was running has
    its checkpoint, Tune's loop ends the way Tune's own interrupt ends it (experiment state saved, unfinished
    trials left RUNNING/PENDING for ``Tuner.restore``). A trial that starts, ends or fails meanwhile is not
    waited for."""

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if INTERRUPT.requested:
            result["should_checkpoint"] = True  # Tune: "Allow user callbacks to modify the Trial result in place"

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        if INTERRUPT.requested:
            INTERRUPT.saved.add(trial.trial_id)

    def on_step_end(self, iteration, trials, **info):
        if not INTERRUPT.requested or INTERRUPT.unfinished is not None:
            return
        if INTERRUPT.waiting is None:
            INTERRUPT.waiting = {t.trial_id for t in trials if t.status == Trial.RUNNING}
        if any(
            t.trial_id in INTERRUPT.waiting and t.trial_id not in INTERRUPT.saved and t.status == Trial.RUNNING
            for t in trials
        ):
            return
        INTERRUPT.unfinished = {t.path for t in trials if t.status not in (Trial.TERMINATED, Trial.ERROR)}
        _end_tune_loop()


def _end_tune_loop() -> None:
    """Ends ``tune.run``'s loop through Tune's interrupt handler (SIGUSR1 in Ray 2.60, SIGINT's when enabled):
    Tune then saves the experiment state, stops the trial actors and returns its results."""
    handler = signal.getsignal(signal.SIGUSR1) if hasattr(signal, "SIGUSR1") else None
    if callable(handler) and getattr(handler, "__module__", "").startswith("ray.tune"):
        for name in ("ray.tune.tune", "ray.tune.analysis.experiment_analysis"):
            logging.getLogger(name).addFilter(_TuneInterruptFilter())
        handler(signal.SIGUSR1, None)
    else:  # a Ray without that handler: the checkpoints are written, stop at once
        raise KeyboardInterrupt


class _TuneInterruptFilter(logging.Filter):
    """Tune's own interrupt lines ("Stop signal received ...", "Resume experiment with: Tuner.restore(...)") and
    its "Failed to fetch metrics" for trials that had not started: our summary says that, with the ``rllib``
    command."""

    LINES = (
        "Stop signal received",
        "Experiment has been interrupted",
        "Trials did not complete",
        "Failed to fetch metrics",
    )

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.LINES)


def _add_interrupt_callback(tuner) -> None:
    """A restored run's callbacks are the pickled ones; older runs have no ``CheckpointOnInterrupt``."""
    get_run_config = getattr(getattr(tuner, "_local_tuner", None), "get_run_config", None)
    run_config = get_run_config() if get_run_config else None
    if run_config is None:
        warn("this Ray's Tuner.restore hides its callbacks: Ctrl-C will not checkpoint the resumed trials")
        return
    callbacks = list(run_config.callbacks or [])
    if not any(isinstance(c, CheckpointOnInterrupt) for c in callbacks):
        run_config.callbacks = callbacks + [CheckpointOnInterrupt()]
