"""SetFit's pooling question on the real M4 sample (MiniLM body, default budget, 5 labels per class):
one contrastive step per seed, then two logistic-regression heads on the same tuned body, the body's
own sentence embedding (SetFit as published) and every layer's mean and CLS (the studio's default),
beside `features-lr` on the untuned backbone's all-layer features. Also the wall time per run.

Run: .venv/bin/python bench/setfit_heads.py [--seeds 0 1 2] [--per-class 5]
Ends with one JSON line of mean test accuracies per head.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from core.data import DataSpec  # noqa: E402
from core.runs import RunFolder  # noqa: E402
from core.runs.execute import train_into  # noqa: E402
from core.train import TrainConfig, load_data, split_pool, validate  # noqa: E402
from core.train.methods.contrastive import head_features  # noqa: E402
from core.train.methods.linear import fit_logistic  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "m4-sample"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--per-class", type=int, default=5)
    args = parser.parse_args()
    data = DataSpec(train=str(SAMPLE / "train.jsonl"), test=str(SAMPLE / "dev.jsonl"))
    scores: dict[str, list[float]] = {"setfit layers": [], "setfit sentence (published)": [], "features-lr": []}
    seconds = []
    with tempfile.TemporaryDirectory() as home:
        os.environ["STUDIO_HOME"] = home
        for seed in args.seeds:
            cfg = validate(TrainConfig(data=data, method="setfit", fraction=None, per_class=args.per_class, seed=seed))
            folder = RunFolder(Path(home) / f"setfit-{seed}")
            t0 = time.perf_counter()
            result = train_into(cfg, folder, lambda e: None, lambda: False)
            seconds.append(time.perf_counter() - t0)
            scores["setfit layers"].append(result["test"]["accuracy"])
            # the published head on the same tuned body and the same labeled rows
            body = folder.load_model().body
            ds = load_data(cfg)
            prepared = split_pool(cfg, ds)
            sentence = cfg.with_(setfit_features="sentence")
            x = head_features(body, sentence, [prepared.pool_texts[i] for i in prepared.labeled])
            coef, bias, _ = fit_logistic(x, prepared.targets[prepared.labeled], len(prepared.classes), cfg.lr_c)
            predicted = prepared.classes[(head_features(body, sentence, ds.test["text"].tolist()) @ coef.T + bias)
                                         .argmax(1)]
            scores["setfit sentence (published)"].append(float(np.mean(predicted == ds.test["label"].to_numpy())))
            ref = train_into(cfg.with_(method="features-lr", frozen=True), RunFolder(Path(home) / f"flr-{seed}"),
                             lambda e: None, lambda: False)
            scores["features-lr"].append(ref["test"]["accuracy"])
            print(f"seed {seed}: {result['budget']}, {seconds[-1]:.0f} s; " +
                  ", ".join(f"{k} {v[-1]:.3f}" for k, v in scores.items()), flush=True)
    means = {k: statistics.mean(v) for k, v in scores.items()}
    print(json.dumps({"per_class": args.per_class, "seeds": args.seeds, "mean_test_accuracy": means,
                      "seconds_per_setfit_run": statistics.mean(seconds)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
