"""Peak memory of `core predict --file` with a frozen SmolLM2 run (features `both`: layer 20's hidden states and
the token-probability statistics), against the file's length.

One frozen features + LR run is trained on the M4 sample (5 a class) in a fresh studio home; then each file of
L2R pool texts (disjoint slices, none of them in the feature store) is predicted in its own process, whose peak
RSS (`os.wait4`'s high-water mark) and wall time are recorded. The goal (issue 84): the peak independent of the
file's length, at most 2 GB. Encoding streams `core.train.feature_store.STREAM_TEXTS` texts at a time into the store.
Run: .venv/bin/python -m bench.speed.predict_memory [--texts 500 5000] [--max-len 128] [--threads 1]
Appends one record per file to bench/records/predict-memory.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.sample_runs import cpu_name
from core.backbone.packaged import SMOLLM2

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "bench" / "records" / "predict-memory.jsonl"
DATA = ROOT.parent / "shared" / "data"
GOAL_GB = 2.0


def measured(args: list[str], env: dict) -> tuple[float, float, str]:
    """Peak RSS in GB (GNU time's high-water mark of that process alone), seconds and stdout of one
    `python -m core` process."""
    with tempfile.NamedTemporaryFile("r") as peak:
        start = time.monotonic()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", peak.name, sys.executable, "-m", "core", *args],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if done.returncode:
            sys.exit(f"python -m core {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return int(peak.read().split()[-1]) * 1024 / 1e9, seconds, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    pool = [json.loads(line)["text"] for line in (DATA / "l2r" / "train.jsonl").open()]
    if sum(args.texts) > len(pool):
        parser.error(f"the files take {sum(args.texts):,} texts; L2R's pool holds {len(pool):,}")
    with tempfile.TemporaryDirectory() as home:
        env = os.environ | {"STUDIO_HOME": home, "OMP_NUM_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1",
                            "TRANSFORMERS_OFFLINE": "1"}
        _, seconds, out = measured(["train", "--train", str(DATA / "m4-sample" / "train.jsonl"),
                                    "--test", str(DATA / "m4-sample" / "dev.jsonl"), "--method", "features-lr",
                                    "--backbone", SMOLLM2, "--features", "both", "--per-class", "5",
                                    "--max-len", str(args.max_len), "--seed", "0"], env)
        run_id = json.loads(subprocess.run([sys.executable, "-m", "core", "runs", "--json"], cwd=ROOT, env=env,
                                           capture_output=True, text=True, check=True).stdout)[0]["run_id"]
        print(f"trained {run_id} in {seconds:.0f} s")
        start = 0
        for n in args.texts:
            path = Path(home) / f"texts-{n}.jsonl"
            with path.open("w") as f:
                for i, text in enumerate(pool[start:start + n]):
                    f.write(json.dumps({"id": f"t{start + i}", "text": text}) + "\n")
            start += n
            peak, seconds, _ = measured(["predict", run_id, "--file", str(path), "--out", str(path) + ".csv"], env)
            record = {"date": time.strftime("%Y-%m-%d"), "cpu": cpu_name(), "threads": args.threads,
                      "backbone": SMOLLM2, "features": "both", "max_len": args.max_len, "texts": n,
                      "peak_rss_gb": round(peak, 3), "seconds": round(seconds, 1),
                      "texts_per_s": round(n / seconds, 2), "goal_gb": GOAL_GB}
            print(json.dumps(record), flush=True)
            with RECORDS.open("a") as f:
                f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
