"""The accuracy studies' sections from the records: TAPT, the GPU check, TREC, the regime study, SmolLM2 on
the M4 sample, its max length and the default backbone."""

from __future__ import annotations

import json

from bench.report.groups import group_table
from bench.report.restore import TITLES
from bench.sample_runs import RECORDS_DIR, at_defaults, recorded
from bench.studies.smollm2_trained import TAG
from core.backbone.packaged import MINILM, SMOLLM2


def tapt_section(made: list[dict], runs: list) -> str:
    """bench/studies/tapt.py's settings table from the records: each recorded adaptation, its CPU minutes and masked-LM
    loss, and features + LR at 20/class on L2R dev over seeds on it, beside the bundled MiniLM (paired by seed)."""
    from bench.studies.tapt import HEAD, base_row, table_row

    def scores(folder: str | None) -> dict[int, float]:  # features + LR at its defaults, on that backbone
        return {r.config.seed: r.metrics["test"]["accuracy"] for r in runs
                if (r.config.backbone == MINILM if folder is None else str(r.config.backbone).endswith(folder))
                and at_defaults(r.config.with_(backbone=None), 20, {"method": "features-lr", "frozen": True})}

    base = scores(None)
    rows = [table_row(entry, scores(entry["folder"]), base)[0]
            for entry in sorted(made, key=lambda e: e["cpu_seconds"])]
    return "\n".join([*HEAD, base_row(base), *rows])


def gpu_section(runs: list) -> str:
    """What the GPU check (bench/gpu/check.py) recorded, apart from every CPU figure: its throughput, and the
    trained-encoder regime study on L2R with wall seconds per run."""
    from bench.studies.regime import adds, adds_table, frame_of, results_table

    speeds = [e for e in recorded(RECORDS_DIR / "speed.jsonl") if e.get("device") == "cuda"]
    if not speeds and not runs:
        return ("No GPU has run the check yet: `make gpu-check` on a CUDA machine (docs/testing.md) records its "
                "figures here, in tables of their own.")
    out = []
    if speeds:
        latest = speeds[-1]
        s = latest["summary"]
        lines = [f"**Throughput** ({latest['machine']}; bf16 matrix-product ceiling {s['ceiling_gflops']:,.0f} GFLOP/s "
                 "in the same process): texts/s, GFLOP/s, share of the ceiling, peak memory", "",
                 "| max length | encoding | training (fine-tuning step) |", "|---|---:|---:|"]
        for n, enc in s["encode"].items():
            tr = s["train"][n]
            lines.append(f"| {n} | " + " | ".join(f"{x['texts_s']:,.0f}/s, {x['gflops']:,.0f} GFLOP/s "
                                                  f"({x['ceiling_share']:.2f}), {x['peak_mib']:,} MiB"
                                                  for x in (enc, tr))
                         + " |")
        out.append("\n".join(lines))
    frame = frame_of(runs)
    if not frame.empty:
        out += ["### The trained-encoder regime study on a GPU (L2R test, 256 tokens; seconds are wall seconds)",
                results_table(frame, ("seconds", "s"))]
        paired = adds(frame)
        out += ["### GAN-BERT − its control with the encoder trained, on a GPU (paired by seed)",
                adds_table(paired) if paired else "No seed has both GAN-BERT and its control on a GPU yet."]
    return "\n\n".join(out)


def trec_section(runs: list, gpu_runs: list) -> str:
    """bench/studies/trec.py's tables from the records: each TREC task's methods at 2% and 1% beside the sources'
    figures, and the paired differences; the GPU check's runs of it apart, in wall seconds."""
    from bench.studies import trec

    frame = trec.frame_of(runs)
    if frame.empty:
        return ""
    out = ["The GAN-BERT authors' split as their code ships it (`../shared/data/ganbert-trec`): 109 labeled TREC "
           "questions (2% of its train set), 5,343 unlabeled, its 500 test questions; every run reads the authors' "
           "labeled rows and no validation (they had none), at 64 tokens as both official codes ran, on MiniLM (6 "
           "layers; the paper's bert-base-cased has 12) unless a row names SmolLM2. At 2% the labeled rows are "
           "fixed, so the seed is the initialisation; at 1% each seed draws half of them per class. The sources' "
           "figures (italics) are the paper's Figure 2c, read off its plot, and the PyTorch notebook's stored "
           "output; CPU seconds are per run, on this 2-core machine while other work shared it.", trec.report(frame)]
    if not (on_gpu := trec.frame_of(gpu_runs)).empty:
        out.append("### On a GPU (the GPU check's runs of the same study; its CPU seconds are the GPU machine's "
                   "process time)\n\n" + trec.report(on_gpu))
    return "\n\n".join(out)


def regime_section(runs: list) -> str:
    """bench/studies/regime.py's tables from the records: every method at every labeled amount, pool and backbone; what
    the adversarial part adds as the pool grows; what adapting the backbone adds."""
    from bench.studies.regime import (
        SMOLLM2_FEATURES,
        adds,
        adds_table,
        backbone_adds,
        encoder_adds_table,
        frame_of,
        results_table,
    )

    runs = [r for r in runs if TAG not in r.config.tags]  # the SmolLM2 study's, at its own lengths: its own section
    frame = frame_of(runs)
    if frame.empty:
        return "No run of the regime study is recorded yet."
    found = adds(frame)
    out = ["### Every method, backbone and pool", results_table(frame),
           "### What the adversarial part adds as the pool grows (GAN-BERT − its control on the same rows, paired "
           "by seed)", adds_table([a for a in found if a["encoder"] == "frozen"])]
    if trained := [r for r in runs if r.status == "done" and not r.config.frozen and r.config.method != "tfidf-lr"]:
        out += ["### With the encoder trained (bench/studies/regime.py --part full): fine-tuning, adapters and "
                "GAN-BERT, the seed report's comparison", group_table(trained)]
        if any(a["encoder"] == "trained" for a in found):
            out += ["### What the adversarial part adds with the encoder trained, beside frozen features (GAN-BERT − "
                    "its control on the same rows, paired by seed)", encoder_adds_table(found)]
    if adapting := backbone_adds(frame, ("adapted",)):
        out += ["### What adapting the backbone adds (a method on the adapted backbone − on the base, paired by seed)",
                adds_table(adapting, "method")]
    if smollm2 := backbone_adds(frame, tuple(SMOLLM2_FEATURES)):
        out += ["### What SmolLM2's features add (a method on its hidden states, token probabilities or both − the "
                "same on MiniLM's, paired by seed)", adds_table(smollm2, "method", "SmolLM2 − MiniLM"),
                smollm2_encoding(runs)]
    return "\n\n".join(out)


BACKBONE_SETTINGS = ("backbone", "revision", "features", "pooling", "pool_layer", "max_len", "encoder_engine")


def regime_runs(runs: list) -> list:
    """A corpus's runs of the regime study: those tagged so, and the MiniLM runs their study reused from other
    benches (a run is reused whatever its tags), told by settings the same but for the backbone's."""
    def twin(run) -> str:
        settings = json.loads(run.config.to_json())
        return json.dumps({k: v for k, v in settings.items() if k not in (*BACKBONE_SETTINGS, "tags")},
                          sort_keys=True)

    tagged = [r for r in runs if "regime" in r.config.tags]
    wanted = {twin(r) for r in tagged}
    latest = {twin(r): r for r in runs if r.config.backbone == MINILM and "regime" not in r.config.tags
              and TAG not in r.config.tags and twin(r) in wanted}
    return tagged + list(latest.values())


def smollm2_section(runs: list) -> str:
    """The regime study's SmolLM2 columns on a corpus beside MiniLM: every method, what SmolLM2's features add,
    and what the game adds on them (paired by seed); empty without SmolLM2 runs."""
    from bench.studies.regime import SMOLLM2_FEATURES, adds, adds_table, backbone_adds, frame_of, results_table

    frame = frame_of(runs)
    if frame.empty or not frame["backbone"].isin(list(SMOLLM2_FEATURES)).any():
        return ""
    return "\n\n".join(["### Every method and backbone", results_table(frame),
                         "### What SmolLM2's features add (paired by seed)",
                         adds_table(backbone_adds(frame, tuple(SMOLLM2_FEATURES)), "method", "SmolLM2 − MiniLM"),
                         "### GAN-BERT − its control (paired by seed)", adds_table(adds(frame)),
                         smollm2_encoding(runs)])


def smollm2_length_section(runs_of: dict[str, list]) -> str:
    """Features + LR on SmolLM2 (both) at each max length, by corpus: what `auto` follows for SmolLM2."""
    from bench.studies.smollm2_length import CUTS, table

    cuts = {e["corpus"]: {int(n): v for n, v in e["cut"].items()} for e in recorded(CUTS)}
    parts = []
    for corpus in ("m4-sample", "l2r-dev"):
        if corpus in cuts and (found := table(runs_of.get(corpus, []), cuts[corpus])):
            parts.append(f"**{TITLES[corpus]}** (`--corpus {corpus}`)\n\n{found}")
    if not parts:
        return ""
    return ("Features + LR on SmolLM2's layer 20 and token probabilities (`both`), 5 seeds, at each max length: the "
            "share of the training texts it cuts (SmolLM2's tokenizer), accuracy, the difference with 128 paired by "
            "seed, and the encoding's seconds over the runs that encoded (each length's store encodes once), on "
            "this 2-core machine while other work shared it.\n\n" + "\n\n".join(parts))


def default_backbone_section(runs_of: dict[str, list]) -> str:
    """bench/studies/default_backbone.py: MiniLM against SmolLM2's hidden states and both feature sets at each one's
    auto length, per corpus, then what each costs in time (issue 78's decision, docs/methods.md)."""
    from bench.studies.default_backbone import LENGTHS, costs, table

    out = []
    for entry in recorded(LENGTHS):
        if (found := table(runs_of.get(entry["corpus"], []), entry["lengths"], entry["precision"])):
            out.append(f"**{TITLES[entry['corpus']]}** (`--corpus {entry['corpus']}`)\n\n{found}")
    if not out:
        return ""
    return ("Features + LR, 5 seeds, each backbone at the length `auto` chooses for it on the corpus; the difference "
            "with MiniLM is paired by seed (the same labeled rows), and the encoding's seconds are summed over the "
            "runs that encoded, on this 2-core machine while other work shared it. SmolLM2's hidden-state runs read "
            "the features its `both` runs had encoded (a store of both holds either), hence their 0.\n\n"
            + "\n\n".join(out)
            + "\n\n**What each costs in time** (bench/speed/estimates.py's grid on L2R: frozen GAN-BERT at pools of 0 "
            "and 1,000 and its control, features + LR and TF-IDF + LR, seeds 0-1, through the real queue; the repeated "
            "grid is the same with other seeds)\n\n" + costs())


def smollm2_encoding(runs: list) -> str:
    """What encoding the study's texts with SmolLM2 (hidden states and token probabilities, read once for all
    three columns) cost, from the runs that encoded them: their encoding seconds and CPU seconds, summed."""
    both = [r for r in runs if r.config.backbone == SMOLLM2 and r.config.features == "both" and r.metrics]
    encoded = [r.metrics for r in both if r.metrics.get("encode_seconds", 0) > 1]
    if not encoded:
        return ""
    texts = max(sum(m.get(k) or 0 for k in ("labeled", "unlabeled", "val_rows", "test_rows")) for m in
                (r.metrics for r in both))
    wall, cpu = sum(m["encode_seconds"] for m in encoded), sum(m["cpu_seconds"] for m in encoded)
    return (f"**Encoding with SmolLM2** (layer 20 and token probabilities at {both[0].config.max_len} tokens, "
            f"{both[0].config.precision}): the study's {texts:,} texts (the pool, the validation and the test texts) "
            f"took {wall / 60:,.0f} min ({texts / wall:.1f} texts/s) and {cpu / 60:,.0f} CPU min over the "
            f"{len(encoded)} runs that encoded them, on this 2-core machine while other work shared it. The "
            "hidden-state and token-probability columns read the same vectors: nothing was encoded twice.")
