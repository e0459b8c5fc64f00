"""Does a cloud storage path answer? Asked before Ray starts: pyarrow's GCS client retries an unreachable bucket for
15 minutes in silence (seen: a ``gs://`` run that printed nothing for 4 minutes on a machine without network), S3's
fails after seconds with a message the run would only show as a trial error.

The probe runs in a child process (pyarrow's C++ retry loop cannot be interrupted from Python) that opens the
filesystem and lists the path once; the child is killed when it has not answered within ``timeout_s``. A path that
does not exist yet is fine (Tune creates it); an error or silence is a one-line mistake naming the bucket."""

from __future__ import annotations

import functools
import subprocess
import sys

from smac_rllib.cli.errors import one_line

PROBE_TIMEOUT_S = 20.0

_PROBE = """
import sys
import pyarrow.fs as fs
filesystem, path = fs.FileSystem.from_uri(sys.argv[1])
filesystem.get_file_info(path)
"""


@functools.lru_cache(maxsize=None)
def unreachable(uri: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when ``uri`` answers within ``timeout_s``; else why not, as words for a message."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, uri], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {timeout_s:.0f} s (no network to it, or no credentials on this machine)"
    if proc.returncode == 0:
        return None
    error = [line for line in proc.stderr.splitlines() if "Error" in line or "Exception" in line]
    return one_line(error[-1] if error else proc.stderr or f"exit {proc.returncode}", 240)
