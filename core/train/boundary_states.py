"""A top-K run's inputs: each text's token states at its encoder's boundary, read from the state store, or
computed by the frozen layers below (in eval mode, without gradients, in batches of like lengths) and stored as
they come, so the next step, epoch, seed or method reads them instead of running those layers again."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from core.backbone.cut import Cut
from core.backbone.encode import CPU_BATCH_TOKENS, batches
from core.train.state_store import SHARD_BYTES, StateStore, ids_hashes

Event = Callable[[dict], None]


class BoundaryStates:
    """Per split, the states of its texts (token ids as the run truncated them) at `cut`'s boundary."""

    def __init__(self, cut: Cut, store: StateStore, ids: dict[str, list[list[int]]], device: torch.device,
                 bf16: bool):
        self.cut, self.store, self.ids, self.device, self.bf16 = cut, store, ids, device, bf16
        self.keys = {split: ids_hashes(rows) for split, rows in ids.items()}

    def prepare(self, rows: dict[str, np.ndarray], on_event: Event = lambda event: None) -> None:
        """Store the states of these rows of each split that the store lacks, in length-sorted batches, with
        `states` events counting them: a run computes them once, before its first step."""
        wanted: dict[bytes, list[int]] = {}
        for split, idx in rows.items():
            for i in idx:
                key = self.keys[split][i]
                if key not in self.store and key not in wanted:
                    wanted[key] = self.ids[split][i]
        keys = list(wanted)
        total = len(keys)
        asked = len({self.keys[split][i] for split, idx in rows.items() for i in idx})
        on_event({"type": "status", "message": f"states after layer {self.cut.boundary}: {asked - total:,} texts "
                                               f"stored, computing {total:,}"})
        if not total:
            return
        on_event({"type": "states", "done": 0, "total": total})
        pending: list[tuple[bytes, torch.Tensor]] = []
        done = 0
        for batch in batches([len(wanted[k]) for k in keys], 32, CPU_BATCH_TOKENS if self.device.type == "cpu"
                             else None):
            chunk = [keys[i] for i in batch]
            pending += zip(chunk, self.compute([wanted[k] for k in chunk]))
            done += len(chunk)
            if sum(s.numel() * 2 for _, s in pending) >= SHARD_BYTES or done == total:
                self.store.write([k for k, _ in pending], [s for _, s in pending])
                pending = []
            on_event({"type": "states", "done": done, "total": total})

    @torch.no_grad()
    def compute(self, rows: list[list[int]]) -> list[torch.Tensor]:
        """The lower layers' output for these texts, each cut to its own tokens, on the CPU."""
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, :len(row)] = 1
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            states = self.cut.below(ids.to(self.device), mask.to(self.device)).cpu()
        return [states[i, :len(row)].clone() for i, row in enumerate(rows)]

    def __call__(self, split: str, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's states padded on the right (batch × tokens × width) and its attention mask, on the device:
        read from the store, and any the store lacks (a GAN-BERT run's unlabeled texts, or a shard deleted since)
        computed now and stored."""
        keys = [self.keys[split][i] for i in idx]
        found = self.store.read(keys)
        missing = [n for n, key in enumerate(keys) if key not in found]
        if missing:
            fresh = self.compute([self.ids[split][idx[n]] for n in missing])
            self.store.write([keys[n] for n in missing], fresh)
            found.update((keys[n], s) for n, s in zip(missing, fresh))
        rows = [found[k] for k in keys]
        width = max(len(r) for r in rows)
        states = torch.zeros(len(rows), width, rows[0].shape[-1], dtype=rows[0].dtype)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            states[i, :len(row)] = row
            mask[i, :len(row)] = 1
        return states.to(self.device), mask.to(self.device)
