"""What the benches on real text share: the corpora (the M4 sample, and L2R tested on its dev or its test
split), and running a config through the registry once, so a bench cut short (or a later session with the same
studio home) goes on where it stopped instead of training the same run again.

Every finished run is also written to its corpus's records, `bench/records/<corpus>.jsonl` (its config and
metrics, a few KB; no texts, no weights), which are committed: a trained-encoder run takes minutes here, and a
session that finds no studio home (a new machine, a cleaned /tmp) restores those runs into its registry instead
of training them again, so a table filled over several sessions is one table of recorded runs."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from core.backbone import attention_dropout
from core.backbone.device import PRECISIONS, pick_device, pinned_precision
from core.data import ColumnMapping, DataSpec
from core.runs import Registry, Run, Status, execute_run, logging_into, reconcile
from core.train import TrainConfig, method_for, resolve
from core.train.config import flat_settings

# Fine-tuning's trained-encoder rate until bench/studies/defaults.py measured it: run_glue's README example, and the
# SemEval RoBERTa baseline's.
FINETUNE_LR_UNTIL_MEASURED = 2e-5
# resolved as runs store their data paths (`DataSpec.absolute`), so a record names a corpus's files by name
# wherever shared/ is, a link included
DATA_ROOT = (Path(__file__).resolve().parents[2] / "shared" / "data").resolve()
# One home for every sample bench, so a run one bench needs and another has finished is not trained twice,
# outside /tmp and the work tree, which a later session on the same machine may not find as they were.
DEFAULT_HOME = str(Path.home() / ".cache" / "gan-bert-studio" / "bench")
RECORDS_DIR = Path(__file__).resolve().parent / "records"
# the engine every bench encodes frozen features with, whatever `auto` names on the machine: a record made at
# `auto` must mean the same run on the next machine (bench/speed/encode.py measures the engines against each other)
BENCH_ENGINE = "torch"


@dataclass(frozen=True)
class Corpus:
    """A real corpus as a bench reads it: its folder under shared/data, its files by role, and its records."""

    name: str
    folder: Path
    files: dict[str, str]  # role (train, val, test, unlabeled) → file name in `folder`
    mapping: ColumnMapping = ColumnMapping()  # which column is the label (TREC's coarse classes: `coarse`)
    kept_in: str | None = None  # the records' name, where it is not the corpus's (two tasks, one file)

    @property
    def records(self) -> Path:
        return RECORDS_DIR / f"{self.kept_in or self.name}.jsonl"

    def spec(self) -> DataSpec | None:
        """Its data spec; None (said on stderr) when the corpus is not beside the checkout."""
        if not (self.folder / self.files["train"]).exists():
            print(f"the corpus {self.name} is not at {self.folder}", file=sys.stderr)
            return None
        return DataSpec(**{role: str(self.folder / name) for role, name in self.files.items()}, mapping=self.mapping)


CORPORA = {
    # the 65 dev texts test: settings and results were chosen and reported on these before L2R came
    "m4-sample": Corpus("m4-sample", DATA_ROOT / "m4-sample", {"train": "train.jsonl", "test": "dev.jsonl"}),
    # settings are chosen on L2R's dev split: train's 11,421 texts are the pool, dev the test
    "l2r-dev": Corpus("l2r-dev", DATA_ROOT / "l2r", {"train": "train.jsonl", "test": "dev.jsonl"}),
    # what is reported: the pool, its dev split to validate on, and its test split, never used to choose
    "l2r": Corpus("l2r", DATA_ROOT / "l2r", {"train": "train.jsonl", "val": "dev.jsonl", "test": "test.jsonl"}),
    # the GAN-BERT authors' TREC split (bench/studies/trec.py): their 109 labeled questions, 5,343 unlabeled and 500
    # test, on its coarse classes (6) and its fine ones (the `label` column: 29 labeled, 44 in all)
    **{f"trec-{task}": Corpus(f"trec-{task}", DATA_ROOT / "ganbert-trec", {"train": "train.jsonl",
                                                                          "unlabeled": "unlabeled.jsonl",
                                                                          "test": "test.jsonl"},
                              ColumnMapping(label=column), kept_in="trec")
       for task, column in (("coarse", "coarse"), ("fine", "label"))},
}
M4 = CORPORA["m4-sample"]
SAMPLE, RECORDS = M4.folder, M4.records


def sample_spec() -> DataSpec | None:
    """Train on the M4 sample's train file, test on its dev file; None when the sample is not beside the
    checkout."""
    return M4.spec()


def sample_parser(doc: str, home: str) -> argparse.ArgumentParser:
    """The flags every sample bench takes: its studio home (kept, so runs are reused), seeds, amounts, and a
    report from the runs already there."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default=home)
    parser.add_argument("--corpus", choices=list(CORPORA), default=M4.name,
                        help="the real corpus: the M4 sample (tested on its dev texts), L2R tested on its dev split "
                             "(l2r-dev: where settings are chosen), or L2R validated on dev and tested on test (l2r)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--per-class", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--report-only", action="store_true", help="the table from the runs in --home")
    add_precision_options(parser)
    return parser


def add_precision_options(parser: argparse.ArgumentParser) -> None:
    """--precision and --any-precision, as every bench that reuses recorded runs takes them."""
    parser.add_argument("--precision", choices=PRECISIONS, default="auto",
                        help="the encoder's precision (auto: bf16 where the CPU has it natively); a run is reused "
                        "only at the precision it ran at, unless --any-precision")
    parser.add_argument("--any-precision", action="store_true",
                        help="reuse a finished run at the other precision (fp32 or bf16) when none ran at this one; "
                        "new runs train at --precision (a CPU without native bf16 runs bf16 some 65x slower). The "
                        "records' twins (one config, seed and rows at both) measure what this mixes in, printed first")


def corpus_of(args: argparse.Namespace) -> Corpus:
    return CORPORA[getattr(args, "corpus", M4.name)]


def open_home(args: argparse.Namespace) -> tuple[DataSpec, Registry] | None:
    """The corpus (--corpus) and the bench's registry (under --home), or None when the corpus is not there."""
    corpus = corpus_of(args)
    spec = corpus.spec()
    if spec is None:
        return None
    home = Path(args.home)
    here = pinned_precision(args.precision, pick_device("auto"))
    elsewhere = other_precisions(here, recorded(corpus.records))
    if args.any_precision:
        gaps = twin_gaps(recorded(corpus.records), home)
        print(f"reusing runs at either precision; the records hold {len(gaps)} fp32/bf16 twin(s), whose test "
              f"accuracies differ by {statistics.mean(gaps) if gaps else float('nan'):+.3f} on average (fp32 − bf16),"
              f" {max(map(abs, gaps), default=float('nan')):.3f} at most", file=sys.stderr)
    elif elsewhere:
        print(f"{sum(elsewhere.values())} recorded run(s) ran at another precision than this bench's ({here}, from "
              f"--precision {args.precision}): {', '.join(f'{n} at {p}' for p, n in elsewhere.items())}; they are "
              "reused only with --precision set to theirs", file=sys.stderr)
    home.mkdir(parents=True, exist_ok=True)
    registry = Registry(home)
    for run_id in reconcile(registry):  # a bench killed mid-run (or a machine stopped under it) left it running
        print(f"run {run_id} was left running by a process that is gone: marked interrupted", file=sys.stderr)
    return spec, registry


def other_precisions(here: str, records: list[dict]) -> dict[str, int]:
    """How many records of encoder runs ran at a precision other than `here` (fp32 or bf16): those are not
    reused, since a run's identity includes its precision."""
    counts = Counter(r["config"]["precision"] for r in records if r["config"]["precision"] != "auto")
    return {p: n for p, n in sorted(counts.items()) if p != here}


def identity(config: TrainConfig, any_precision: bool = False) -> str:
    """A run's settings without its tags (and without its precision when either will do): two benches asking
    for the same run share it."""
    raw = asdict(config)
    raw.pop("tags")
    if any_precision:
        raw.pop("precision")
    return json.dumps(raw, sort_keys=True, default=str)


def twin_gaps(records: list[dict], home: Path, folder: Path = SAMPLE) -> list[float]:
    """Test accuracy at fp32 minus at bf16, for each config (seed and rows included) recorded at both."""
    twins: dict[str, dict[str, float]] = {}
    for entry in records:
        config = from_record(entry["config"], home, folder)
        twins.setdefault(identity(config, any_precision=True), {})[config.precision] = \
            entry["metrics"]["test"]["accuracy"]
    return [t["fp32"] - t["bf16"] for t in twins.values() if {"fp32", "bf16"} <= t.keys()]


def as_ran(config: TrainConfig) -> TrainConfig:
    """A stored config with the learning rate and batch it ran at. Runs stored before those were written in
    (2026-11-25) left them to the method and ran at that day's defaults: today's, but for fine-tuning's rate
    with the encoder training, which bench/studies/defaults.py has moved since, and the attention dropout, then the
    backbone's own. Its validation stays as it ran: a run of the earlier carve read other rows than a run of today's
    rule, so it never stands in for one; so does GAN-BERT's floor on batches without labels (2026-12-02: a run
    stored without it repeated its labeled rows by the authors' rule alone)."""
    floor = {"batches_without_labels": config.params.batches_without_labels} if config.method == "ganbert" else {}
    settled = method_for(config).settle(config).with_(validation=config.validation, selection=config.selection,
                                                      **floor)
    if config.attention_dropout is None and settled.attention_dropout is not None:  # stored before 0 was the default
        settled = settled.with_(attention_dropout=attention_dropout(config.backbone))
    if config.lr is None and config.method == "finetune" and not settled.frozen:
        return settled.with_(lr=FINETUNE_LR_UNTIL_MEASURED)
    return settled


IN_HOME = "studio:"  # a record's backbone adapted in the studio home, named from the home: `studio:backbones/<name>`


def portable(config: TrainConfig, home: Path, folder: Path = SAMPLE) -> dict:
    """A config as a record keeps it: the corpus's files by their names, and a backbone adapted in the studio `home`
    by its place there, so a checkout elsewhere (or a scratch home) matches."""
    raw = json.loads(config.to_json())
    for role, path in config.data.paths.items():
        if Path(path).parent == folder:
            raw["data"][role] = Path(path).name
    if config.backbone and Path(config.backbone).is_relative_to(home):
        raw["backbone"] = IN_HOME + str(Path(config.backbone).relative_to(home))
    return raw


def from_record(raw: dict, home: Path, folder: Path = SAMPLE) -> TrainConfig:
    """The inverse of `portable`, the corpus's files named where this checkout finds them, an adapted backbone in
    the studio `home`."""
    data = dict(raw["data"])
    for role in ("train", "test", "val", "unlabeled"):
        if data.get(role) and not Path(data[role]).is_absolute():
            data[role] = str(folder / data[role])
    backbone = raw.get("backbone")
    if backbone and backbone.startswith(IN_HOME):
        backbone = str(home / backbone.removeprefix(IN_HOME))
    return TrainConfig.from_json(json.dumps({**raw, "data": data, "backbone": backbone}))


# the settings a run's record takes from the machine or the data, not from what the bench asked
MACHINE = ("seed", "tags", "device", "max_len", "precision", "revision", "encoder_engine")


def at_defaults(config, per_class: int, settings: dict) -> bool:
    """Whether a recorded run is the method's defaults at `per_class` (the whole unlabeled pool, the validation
    rule, the bundled backbone, the default engine): told from the record alone, so the table is the same on every
    machine."""
    if "encode" in config.tags or config.encoder_engine not in ("auto", "torch"):
        return False  # bench/speed/encode.py's engines and precisions, each a comparison of its own
    asked = TrainConfig.of(data=config.data, cleaning=config.cleaning, fraction=None, per_class=per_class, **settings)
    expected = flat_settings(method_for(asked).settle(asked), MACHINE)
    return flat_settings(config, MACHINE) == expected


def run_each(registry: Registry, args: argparse.Namespace, configs: list[TrainConfig],
             name: Callable[[TrainConfig], str]) -> list[Run]:
    """Each config's finished run, found or trained by `run_once` under a sample bench's flags (`sample_parser`),
    each said as it comes by its `name`, its accuracy and its encoding's seconds; with --report-only, those found."""
    runs = []
    for config in configs:
        run = run_once(registry, config, train=not args.report_only, any_precision=args.any_precision,
                       corpus=corpus_of(args))
        if run is not None:
            runs.append(run)
            print(f"{name(run.config)}: accuracy {run.metrics['test']['accuracy']:.3f}, encoding "
                  f"{run.metrics.get('encode_seconds') or 0:.0f} s", flush=True)
    return runs


def end_study(frame, report: Callable, pairs: Callable) -> int:
    """A study's last words: its tables (`report`) and one JSON line of its paired rows (`pairs`), or that no run
    has finished yet; the exit code."""
    if frame.empty:
        print("no finished runs yet")
        return 0
    print(report(frame))
    print(json.dumps({"runs": len(frame), "pairs": pairs(frame)}))
    return 0


def keep_for_corpus(records: Path, entry: dict) -> None:
    """A record file of one line a corpus (what a bench measured of its data): `entry` in place of its corpus's."""
    kept = [e for e in recorded(records) if e["corpus"] != entry["corpus"]]
    records.write_text("".join(json.dumps(e) + "\n" for e in [*kept, entry]))


def cpu_info() -> str:
    return Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), or what the platform says where there is none."""
    import platform

    return next((line.split(":", 1)[1].strip() for line in cpu_info().splitlines() if line.startswith("model name")),
                platform.processor() or "unknown")


def machine() -> str:
    """The CPU a measurement ran on, in words: its name, whether it runs bf16 natively (AMX, AVX512-BF16: what
    separates the CPUs this project meets by up to 5×), and torch's threads."""
    import torch

    extras = [name for name, flag in (("AMX", "amx_tile"), ("AVX512-BF16", "avx512_bf16")) if flag in cpu_info()]
    return f"{cpu_name()} ({', '.join(extras) or 'no native bf16'}), {torch.get_num_threads()} thread(s)"


def record_speed(bench: str, summary: dict) -> None:
    """A speed bench's summary, appended to `bench/records/speed.jsonl` with the machine it ran on, for the report."""
    import torch

    from core.backbone.device import native_bf16

    machine = f"{cpu_name()}, {torch.get_num_threads()} threads, native bf16: {native_bf16(torch.device('cpu'))}"
    RECORDS_DIR.mkdir(parents=True, exist_ok=True)
    with (RECORDS_DIR / "speed.jsonl").open("a") as out:
        out.write(json.dumps({"bench": bench, "machine": machine, "summary": summary}, sort_keys=True) + "\n")


def on_gpu(entry: dict) -> bool:
    """Whether a record's run ran on a GPU (its `device` as the run card names it): GPU and CPU figures are
    never summarised together."""
    return (entry.get("device") or "").startswith("GPU")


def recorded(records: Path) -> list[dict]:
    return [json.loads(line) for line in records.read_text().splitlines() if line] if records.exists() else []


def record(run: Run, records: Path, home: Path, folder: Path = SAMPLE) -> None:
    """Append a finished run (of the studio `home`) to the records, once per run and per config as it ran
    (`as_ran`)."""
    mine = identity(as_ran(run.config))
    if any(r["id"] == run.id or identity(as_ran(from_record(r["config"], home, folder))) == mine
           for r in recorded(records)):
        return
    records.parent.mkdir(parents=True, exist_ok=True)
    line = {"id": run.id, "device": run.device, "config": portable(run.config, home, folder), "metrics": run.metrics}
    with records.open("a") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")


def restore(registry: Registry, entry: dict, folder: Path = SAMPLE) -> Run:
    """A recorded run into this registry through the lifecycle, as the run it was (its metrics, its device)."""
    run_id = registry.create(from_record(entry["config"], registry.home, folder))
    registry.claim(run_id)
    registry.mark_running(run_id, os.getpid(), entry["device"] or "cpu")
    registry.finish(run_id, Status.DONE, f"restored from bench/records (run {entry['id']})", entry["metrics"])
    return registry.get(run_id)


def finished(registry: Registry, config: TrainConfig, records: Path | None = None, any_precision: bool = False,
             corpus: Corpus = M4) -> Run | None:
    """The finished run of this resolved config: from the registry (and then recorded), else restored from the
    records (with `any_precision`, at this precision first, then at the other); None when neither holds it."""
    records, folder = records or corpus.records, corpus.folder
    for pooled in (False, True) if any_precision else (False,):
        wanted = identity(config, pooled)
        for run in registry.list(statuses=(Status.DONE,)):
            settled = as_ran(run.config)
            if identity(settled, pooled) == wanted:
                run = replace(run, config=settled)
                record(run, records, registry.home, folder)
                return run
        for entry in recorded(records):  # as it ran, as a registry's run is read (a record's None attention dropout)
            if identity(as_ran(from_record(entry["config"], registry.home, folder)), pooled) == wanted:
                return restore(registry, entry, folder)
    return None


def run_once(registry: Registry, config: TrainConfig, train: bool = True, records: Path | None = None,
             any_precision: bool = False, corpus: Corpus = M4) -> Run | None:
    """The finished run of this config (validated as a launch would): as `finished` finds it, else trained now
    (with `train` off, None then). Every finished run ends up in the records."""
    config, records = resolve(config, registry.home), records or corpus.records
    if (done := finished(registry, config, records, any_precision, corpus)) is not None:
        return done
    if not train:
        return None
    run_id = registry.create(config)
    registry.claim(run_id)
    with logging_into(registry.folder(run_id)):
        execute_run(registry, run_id)
    run = registry.get(run_id)
    if run.status == Status.DONE:
        record(run, records, registry.home, corpus.folder)
    if run.status == Status.CANCELLED:  # a SIGTERM reaches the run, not the bench: without this it went on to the next
        raise SystemExit(f"run {run_id} was cancelled ({run.message}); the bench stops here and, run again, "
                         "resumes from the records")
    return run
