"""What every benchmark writes its rows with: one CSV per table (the markdown beside it is each script's own)."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(rows: list[dict], path: Path) -> None:
    """Rows (dicts with the same keys) to ``path``, the first row's keys as the header."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
