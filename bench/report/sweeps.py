"""bench/studies/defaults.py's sweeps from the records: attention dropout, and the trained-encoder budget with
the floor on batches without labels."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable

from bench import figures
from core.backbone import attention_dropout


def attention_section(runs_of: dict[str, list]) -> str:
    """bench/studies/defaults.py's attention-dropout sweep: each trained-encoder method at 0 − at the backbone's own
    rate, paired by seed, on the runs alike in every other setting; with their CPU seconds. A run stored with none ran
    at the backbone's rate (MiniLM's 0.1), as every run did before 0 was the default."""
    from core.compare.seeds import mean_ci, paired
    from core.train.config import flat_settings

    lines = ["| corpus | method | labeled | the backbone's rate | 0 | 0 − the backbone's, accuracy [95% CI] | ahead / "
             "behind | p | CPU s/run (the backbone's → 0) |", "|---|---|---|---:|---:|---|---|---:|---|"]
    for corpus in ("m4-sample", "l2r-dev"):
        found: dict[str, dict[bool, dict[int, tuple[float, float]]]] = {}
        for r in runs_of.get(corpus, []):
            c = r.config
            game = c.method == "ganbert" and (not c.params.adversarial or c.params.gan_preset != "studio")
            if c.frozen or c.method not in ("finetune", "ganbert") or game or "defaults" not in c.tags \
                    or c.attention_dropout not in (None, 0.0, attention_dropout(c.backbone)):
                continue
            key = json.dumps(flat_settings(c, ("attention_dropout", "seed", "tags")), sort_keys=True, default=str)
            found.setdefault(key, {}).setdefault(c.attention_dropout == 0.0, {})[c.seed] = (
                r.metrics["test"]["accuracy"], (r.metrics or {}).get("cpu_seconds") or 0.0)
        for key, by in found.items():
            if not (by.get(True) and by.get(False)):
                continue
            settings = json.loads(key)
            zero, shipped = by[True], by[False]
            p = paired("0", "backbone's", "accuracy", {s: a for s, (a, _) in zero.items()},
                       {s: a for s, (a, _) in shipped.items()})
            if not p.seeds:
                continue
            name = "fine-tuning" if settings["method"] == "finetune" else (
                "GAN-BERT G1" + ("" if settings.get("unlabeled_limit") is None else
                                 f", pool {settings['unlabeled_limit']:,}"))
            both = sorted(p.seeds)
            lines.append(f"| {corpus} | {name} | {settings['per_class']}/class | "
                         f"{mean_ci([shipped[s][0] for s in both]).mean:.3f} | "
                         f"{mean_ci([zero[s][0] for s in both]).mean:.3f} | "
                         f"{figures.difference(p.difference)} | {p.wins} / {p.losses} | {p.p_value:.3g} | "
                         f"{statistics.mean(shipped[s][1] for s in both):,.0f} → "
                         f"{statistics.mean(zero[s][1] for s in both):,.0f} |")
    if len(lines) == 2:
        return ""
    return ("**Attention dropout** (bench/studies/defaults.py, the encoder training): accuracy at attention dropout "
            "0 against the backbone's own rate (MiniLM's 0.1) on the same rows, paired by seed, and the CPU seconds a "
            "run took\n\n" + "\n".join(lines))


def budget_section(runs_of: dict[str, list]) -> str:
    """bench/studies/defaults.py's trained-encoder budget (issue 60): GAN-BERT G1 and its control with the encoder
    training, at attention dropout 0 (the default), per corpus, amount, pool and step cap; G1 − control and G1 − G1
    at the default cap, each paired by seed; the steps a run took (where 30 epochs end before the cap, the cap
    changes nothing) and its CPU seconds."""
    from core.compare.seeds import paired
    from core.train.config import flat_settings
    from core.train.methods.presets import STUDIO, floored

    default_cap = STUDIO[False]["max_steps"]
    found: dict[str, dict[int, dict[bool, dict[int, tuple[float, float, int]]]]] = {}
    for corpus in ("m4-sample", "l2r-dev"):
        for r in runs_of.get(corpus, []):
            c = r.config
            if c.frozen or c.method != "ganbert" or c.params.gan_preset != "studio" or "defaults" not in c.tags \
                    or c.attention_dropout != 0.0 or (c.params.adversarial and c.params.generator != "noise"):
                continue
            key = json.dumps({"corpus": corpus, **flat_settings(c, ("max_steps", "seed", "tags", "adversarial",
                                                                      "generator"))}, sort_keys=True, default=str)
            found.setdefault(key, {}).setdefault(c.max_steps, {}).setdefault(c.params.adversarial, {})[c.seed] = (
                r.metrics["test"]["accuracy"], r.metrics.get("cpu_seconds") or 0.0, r.metrics.get("steps") or 0)
    lines = ["| corpus | labeled | pool | batches without labels | precision | step cap | steps taken | G1 | control | "
             "G1 − control [95% CI] | ahead / behind | G1 − G1 at the default cap [95% CI] | CPU s/run (G1, control) |",
             "|---|---|---|---|---|---:|---:|---|---|---|---|---|---|"]

    def acc(by: dict[int, tuple]) -> str:
        return figures.mean([a for a, _, _ in by.values()], empty="not run")

    def difference(a: dict[int, tuple], b: dict[int, tuple]) -> tuple[str, str]:
        p = paired("a", "b", "accuracy", {s: v[0] for s, v in a.items()}, {s: v[0] for s, v in b.items()})
        if not p.seeds:
            return "–", "–"
        return figures.difference(p.difference), f"{p.wins} / {p.losses}"

    def cpu(by: dict[int, tuple]) -> str:
        return f"{statistics.mean(v[1] for v in by.values()):,.0f}" if by else "–"

    for key in sorted(found, key=lambda k: (json.loads(k)["corpus"], json.loads(k)["per_class"],
                                            str(json.loads(k)["unlabeled_limit"]), json.loads(k)["precision"],
                                            str(json.loads(k).get("batches_without_labels")))):
        settings, caps = json.loads(key), found[key]
        pool = "all" if settings["unlabeled_limit"] is None else f"{settings['unlabeled_limit']:,}"
        floor = settings.get("batches_without_labels")
        floor = f"at most {floor:.0%}" if floored(floor) else "the authors' copies alone"
        for cap in sorted(caps, key=lambda c: c or 0):
            game, control = caps[cap].get(True, {}), caps[cap].get(False, {})
            gain, record = difference(game, control)
            against = difference(game, caps.get(default_cap, {}).get(True, {}))[0] if cap != default_cap else "–"
            taken = [v[2] for v in (*game.values(), *control.values())]
            lines.append(f"| {settings['corpus']} | {settings['per_class']}/class | {pool} | {floor} | "
                         f"{settings['precision']} | {cap} | "
                         f"{statistics.mean(taken):.0f} | {acc(game)} | {acc(control)} | {gain} | {record} | "
                         f"{against} | {cpu(game)}, {cpu(control)} |")
    if len(lines) == 2:
        return ""
    floor = floor_table(found, difference)
    return ("**The trained-encoder budget** (bench/studies/defaults.py, GAN-BERT's `studio` preset with the encoder "
            f"training: batch 16 at 5e-5, 30 epochs capped at {default_cap} steps by default, attention dropout 0): "
            "G1 and its control at each step cap on the same rows, paired by seed. *Batches without labels*: the "
            "floor on batches that hold no labeled row, which repeats the labeled rows beyond the authors' "
            "int(log2(1/share)) copies where a batch of 16 over a large pool would miss them (the default: at most "
            "5%); runs stored before it had the authors' copies alone\n\n" + "\n".join(lines)
            + ("\n\n**The floor on batches without labels** (bench/studies/defaults.py, \"GAN-BERT G1 label floor\" "
               "and \"GAN-BERT control label floor\"): each with the floor − the same with the authors' copies "
               "alone, at one precision and step cap, paired by seed\n\n" + floor if floor else ""))


def floor_table(found: dict, difference: Callable[[dict, dict], tuple[str, str]]) -> str:
    """The budget sweep's runs with the floor against their twins with the authors' copies alone (the same corpus,
    amount, pool, precision and cap), G1 and the control apart; "" when no twin is recorded."""
    from core.train.methods.presets import floored

    twins: dict[tuple, dict[bool, dict]] = {}
    for key, caps in found.items():
        settings = json.loads(key)
        floor = settings.pop("batches_without_labels", None)
        for cap, by_game in caps.items():
            for game, by_seed in by_game.items():
                twins.setdefault((json.dumps(settings, sort_keys=True), cap, game), {})[floored(floor)] = by_seed
    lines = ["| corpus | labeled | pool | precision | step cap | method | with the floor | the authors' copies alone | "
             "floor − authors' [95% CI] | ahead / behind |", "|---|---|---|---|---:|---|---|---|---|---|"]
    for (key, cap, game), by_floor in sorted(twins.items(), key=lambda t: (t[0][0], t[0][1], not t[0][2])):
        if len(by_floor) < 2:
            continue
        settings = json.loads(key)
        pool = "all" if settings["unlabeled_limit"] is None else f"{settings['unlabeled_limit']:,}"
        gain, record = difference(by_floor[True], by_floor[False])
        means = [f"{statistics.mean(v[0] for v in by_floor[f].values()):.3f} (n={len(by_floor[f])})"
                 for f in (True, False)]
        lines.append(f"| {settings['corpus']} | {settings['per_class']}/class | {pool} | {settings['precision']} | "
                     f"{cap} | {'G1' if game else 'control'} | {means[0]} | {means[1]} | {gain} | {record} |")
    return "\n".join(lines) if len(lines) > 2 else ""
