"""Bring the committed records up to today's configs: a setting added since a run was recorded is written into
its record as the run had it, so a bench asking for today's defaults finds the runs that ran exactly so, and
not the others.

- `batches_without_labels` (2026-12-02): GAN-BERT's floor on batches without labels. A run of the `studio` or
  `seed-report` preset recorded before it repeated its labeled rows by the authors' rule alone. Where the floor
  (the preset's 0.05) gives the same copies for the run's labeled and unlabeled counts, the run ran exactly as
  a run with the floor does, and its record says 0.05; where the floor would have added copies, it says 1.0
  (the authors' rule alone). The `tf` and `notebook` presets have no floor and keep None.

Run: .venv/bin/python -m bench.migrate_records   (idempotent; prints what it changed)
"""

from __future__ import annotations

import json
from pathlib import Path

from core.train.methods.presets import PRESETS, copies

RECORDS_DIR = Path(__file__).resolve().parent / "records"


def with_floor(entry: dict) -> dict:
    """A run's record with the floor it ran at written in (unchanged when written already or not GAN-BERT's)."""
    config, metrics = entry.get("config"), entry.get("metrics") or {}
    if not config or config.get("method") != "ganbert" or config.get("batches_without_labels") is not None:
        return entry
    floor = PRESETS[config.get("gan_preset", "studio")].batches_without_labels
    if floor is None:
        return entry
    labeled, unlabeled, batch = metrics.get("labeled"), metrics.get("unlabeled"), config.get("batch_size")
    if labeled is None or unlabeled is None or batch is None:
        raise ValueError(f"record {entry.get('id')}: no labeled and unlabeled counts to tell its copies by")
    same = copies(labeled, unlabeled, batch, floor) == copies(labeled, unlabeled, batch, None)
    return {**entry, "config": {**config, "batches_without_labels": floor if same else 1.0}}


def migrate(path: Path) -> int:
    """Rewrite one records file in place (whole, then renamed over it); the number of records changed."""
    lines = [line for line in path.read_text().splitlines() if line]
    entries = [json.loads(line) for line in lines]
    migrated = [with_floor(e) for e in entries]
    changed = sum(a != b for a, b in zip(entries, migrated))
    if changed:
        scratch = path.with_suffix(".migrating")
        scratch.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in migrated))
        scratch.replace(path)
    return changed


def main() -> int:
    for path in sorted(RECORDS_DIR.glob("*.jsonl")):
        if (changed := migrate(path)):
            print(f"{path.name}: {changed} record(s) given the floor they ran at")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
