"""What every benchmark writes its rows with: one CSV per table, and its markdown page (the text its own)."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(rows: list[dict], path: Path) -> None:
    """Rows (dicts with the same keys) to ``path``, the first row's keys as the header."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


NOTES = "## Notes"  # a page's hand-written sections start with this heading; a rerun keeps them


def write_page(path: Path, text: str) -> None:
    """Write a results page, keeping the hand-written part of the page it replaces: everything from its first heading
    that starts with ``## Notes`` (run diaries, moved notes) is appended again after the new text."""
    path = Path(path)
    kept = ""
    if path.exists():
        old = path.read_text()
        at = old.find("\n" + NOTES)
        if at >= 0:
            kept = old[at:]
    path.write_text(text.rstrip("\n") + "\n" + kept if kept else text)
