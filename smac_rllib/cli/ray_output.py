"""What Ray and Tune print that the user cannot act on, kept out of the terminal (it stays in Ray's log files):
Tune's traceback of a trial's configuration error (the summary says it in one line), its stale-checkpoint notice after
a resume, its failed copy of a searcher file it was renaming, and the raylet's worker-pool notice. ``rllib train -v``
shows everything. ``quiet``: RLlib's warnings while the CLI checks or builds configs."""

from __future__ import annotations

import logging
import re
import warnings

from smac_rllib.cli.checkpoints import config_error
from smac_rllib.cli.errors import one_line, warn


class ConfigErrorFilter(logging.Filter):
    """A trial that failed with a configuration error (checkpoints.TrialConfigError) is reported in one line by
    ``ProgressPrinter`` and the summary; Tune's own report of it (the ~30-line "Trial task failed" traceback, then
    "Trials did not complete" and "Failed to fetch metrics" for the trial that never produced a result) is dropped."""

    LINES = ("Trials did not complete", "Failed to fetch metrics")
    seen = False

    @classmethod
    def install(cls) -> None:
        for name in ("ray.tune.execution.tune_controller", "ray.tune.tune", "ray.tune.analysis.experiment_analysis"):
            logger = logging.getLogger(name)
            if not any(isinstance(f, cls) for f in logger.filters):
                logger.addFilter(cls())

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and config_error(exc):
            ConfigErrorFilter.seen = True
            return False
        return not (ConfigErrorFilter.seen and str(record.msg).startswith(self.LINES))


class StaleCheckpointFilter(logging.Filter):
    """After a kill, Tune's last experiment snapshot can list a checkpoint that ``num_to_keep`` already deleted;
    on resume Tune then fails to delete it again and logs that with the whole result dict. Harmless (the new
    checkpoint is registered first): one warning line instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, FileNotFoundError) and "Error handling checkpoint" in str(record.msg):
            warn(f"an old checkpoint was already deleted before the interruption ({one_line(exc)}); continuing")
            return False
        return True


class StateCopyRaceFilter(logging.Filter):
    """Tune writes its experiment state into a staging dir and copies that dir to the storage path in a background
    thread; the searcher's file is written as ``.<uuid>-tmp-<name>`` and renamed, so a copy that listed the temp file
    before the rename fails to open it and Tune logs a 20-line traceback ("Saving experiment state to storage ...
    failed"). Nothing is lost: the renamed file goes with the next copy, and the last one (at the end of the run, or
    the next snapshot) is taken after the write. That record, and only that one, is dropped.
    """

    TEMP_FILE = re.compile(r"/\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-tmp-")

    @classmethod
    def install(cls) -> None:
        logger = logging.getLogger("ray.tune.execution.experiment_state")
        if not any(isinstance(f, cls) for f in logger.filters):
            logger.addFilter(cls())

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, FileNotFoundError) and self.TEMP_FILE.search(str(exc)))


# Notices Ray's raylet pushes to the driver's terminal that say nothing the user can act on (they stay in Ray's
# log files, raylet.out): the worker-pool size warning every multi-actor run triggers on a small machine.
RAY_NOTICES_KEPT_OUT = ("PYTHON worker processes have been started",)


def quiet_ray_notices() -> None:
    """Ray's driver prints every raylet notice to stdout (``ray._private.worker.print_to_stdstream``, called by name
    from its error-listening thread); keep those in ``RAY_NOTICES_KEPT_OUT`` out, every other (e.g. the OOM killer's)
    goes through. ``rllib train -v`` shows them all."""
    import ray._private.worker as ray_worker  # lazy: `rllib evaluate` imports this module (quiet) before Ray

    original = ray_worker.print_to_stdstream
    if getattr(original, "smac_filtered", False):
        return

    def filtered(data, ignore_prefix):
        lines = [line for line in data.get("lines", []) if not any(n in str(line) for n in RAY_NOTICES_KEPT_OUT)]
        if lines:
            original({**data, "lines": lines}, ignore_prefix)

    filtered.smac_filtered = True
    ray_worker.print_to_stdstream = filtered


class quiet:
    """Silence RLlib's warnings and log lines ("You are running SAC on the new API stack!") while checking."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._loggers = [logging.getLogger(n) for n in ("ray", "ray.rllib", "ray.tune")]
        self._levels = [lg.level for lg in self._loggers]
        for lg in self._loggers:
            lg.setLevel(logging.ERROR)
        return self

    def __exit__(self, *exc):
        for lg, level in zip(self._loggers, self._levels, strict=True):
            lg.setLevel(level)
        self._warnings.__exit__(*exc)
        return False
