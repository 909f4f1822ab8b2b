"""`states`: what the state stores of top-K runs hold under the studio home, and clearing them."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from core.train.state_store import clear, size_words, store_limit, summaries


def cmd_states(args: argparse.Namespace) -> int:
    home = args.home
    if args.clear:
        print(f"cleared the stored states: {size_words(clear(home))} freed")
        return 0
    stores = summaries(home)
    if args.json:
        print(json.dumps({"limit_bytes": store_limit(), "stores": [asdict(s) for s in stores]}))
        return 0
    total = sum(s.bytes for s in stores)
    print(f"stored states: {sum(s.texts for s in stores):,} texts in {len(stores)} store(s), {size_words(total)} of "
          f"at most {size_words(store_limit())} (STUDIO_STATES_GIB)")
    for s in stores:
        print(f"  {s.backbone}, after layer {s.boundary} ({s.precision}): {s.texts:,} texts, {size_words(s.bytes)}")
    return 0
