"""`python -m core label`: label a corpus in the terminal, text by text as a strategy picks them (every label saved
as it is given, in the session the Label page opens too), export the labels as a dataset, or `--simulate` a
strategy with the corpus's own labels as the oracle."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from tqdm import tqdm

from core.cli.options import follow, spec_from_args
from core.data import Dataset, load_texts
from core.errors import InputError
from core.label import session as sessions
from core.label.export import export
from core.label.features import feature_config, features
from core.label.rounds import Labeling, Round
from core.label.simulate import simulate
from core.label.simulations import keep
from core.label.strategies import strategy

SHOWN_CHARS = 2000  # of a text, in the terminal; the page shows it whole
# control characters but line breaks and tabs: a text's own escape sequences would drive the terminal
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """A corpus's text or id as the terminal should print it: its control characters as `\\xNN`."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def labeling(ds: Dataset, backbone: str | None, home: Path) -> Labeling:
    config = feature_config(ds, backbone, home)
    with tqdm(desc="features", unit="text", file=sys.stderr) as bar:
        pool, test = features(config, ds, home, follow(bar), lambda message: bar.set_postfix_str(message[:60]))
    return Labeling(ds, pool, test)


def status(r: Round) -> str:
    counts = ", ".join(f"{shown(name)} {n}" for name, n in r.per_class.items())
    scored = f" · accuracy {r.scores.accuracy:.3f} on {r.scores.n} test texts" if r.scores else ""
    return f"{len(r.labels)} labels ({counts}){scored}"


def ask(lab: Labeling, r: Round) -> str:
    text = lab.ds.train["text"].iloc[r.next]
    cut = f"\n… ({len(text) - SHOWN_CHARS:,} more characters)" if len(text) > SHOWN_CHARS else ""
    print(f"\n--- {shown(lab.ids[r.next])} ---\n{shown(text[:SHOWN_CHARS])}{cut}")
    if r.guess is not None:
        print(f"guess: {shown(lab.classes[int(r.guess.argmax())])} ({r.guess.max():.0%})")
    choices = "  ".join(f"{i + 1} {shown(name)}" for i, name in enumerate(lab.classes))
    return input(f"{choices}   u undo  q quit > ").strip()


def cmd_label(args: argparse.Namespace) -> int:
    home = args.home
    strategy(args.strategy)
    ds = load_texts(spec_from_args(args.path, args).absolute(), home)
    if args.simulate:
        return simulated(ds, args, home)
    if strategy(args.strategy).needs_labels:
        raise InputError(f"'{args.strategy}' knows every text's class: run it with --simulate")
    session = sessions.save(home, sessions.Session(ds.spec, ds.labels, args.strategy, args.backbone, args.seed))
    if args.export:
        spec = export(ds, sessions.given(home, session, set(ds.train["id"].astype(str))), ds.labels,
                      Path(args.export))
        print(json.dumps({"train": spec.train, "unlabeled": spec.unlabeled, "test": spec.test,
                          "labels": ",".join(ds.labels)}))
        return 0
    lab = labeling(ds, args.backbone, args.home)
    while True:
        r = lab.round(sessions.given(home, session, lab.id_set), args.strategy, args.seed)
        print(status(r), file=sys.stderr)
        if r.next is None:
            print("every text has a label", file=sys.stderr)
            return 0
        try:
            answer = ask(lab, r)
        except EOFError:
            return 0
        if answer == "q":
            return 0
        if answer == "u":
            undone = sessions.undo(home, session, lab.id_set)
            print(f"undone: {shown(undone)}" if undone else "no label to undo", file=sys.stderr)
        elif answer.isdigit() and 1 <= int(answer) <= len(lab.classes):
            sessions.label(home, session, lab.ids[r.next], lab.classes[int(answer) - 1])
        else:
            print(f"'{shown(answer)}' is not a class number (1-{len(lab.classes)}), u or q", file=sys.stderr)


def simulated(ds: Dataset, args: argparse.Namespace, home: Path) -> int:
    """The strategy simulated, printed, and kept in the home for Compare's chart."""
    lab = labeling(ds, args.backbone, args.home)
    known = ds.train["label"].to_numpy()
    with tqdm(desc=f"simulate {args.strategy}", unit="round", file=sys.stderr) as bar:
        points = simulate(lab.space, known, lab.test_x, lab.test_y, len(lab.classes), args.strategy, args.seed,
                          args.budget, on_progress=follow(bar))
    session = sessions.opened(home, sessions.Session(ds.spec, ds.labels, backbone=args.backbone))
    keep(home, session, args.strategy, args.backbone, args.seed, points)
    if args.json:
        print(json.dumps([p.__dict__ for p in points]))
    else:
        print("labels  accuracy  macro-F1  round (s)")
        for p in points:
            print(f"{p.labels:6d}  {p.accuracy:8.3f}  {p.macro_f1:8.3f}  {p.seconds:9.3f}")
    return 0
