"""`python -m core export`: finished runs into an MLflow tracking store (`core.runs.tracking`)."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from core.errors import InputError
from core.runs import Registry, Status
from core.runs.tracking.store import default_uri, export_runs, exportable, where_to_look


class UsageError(InputError):
    pass


def chosen(registry: Registry, args: argparse.Namespace) -> list[str]:
    """The ids given, or every finished run (`--all`), or those with a tag (`--tag`)."""
    if args.run_ids and (args.all or args.tag):
        raise UsageError("give run ids, or --all, or --tag, not several")
    if args.run_ids:
        return args.run_ids
    if not (args.all or args.tag):
        raise UsageError("give run ids to export, or --all, or --tag T")
    done = [r for r in registry.list(statuses=(Status.DONE,)) if args.all or set(args.tag) & set(r.config.tags)]
    if not done:
        raise UsageError("no finished run to export" + (f" tagged {', '.join(args.tag)}" if args.tag else ""))
    return [r.id for r in done]


def cmd_export(args: argparse.Namespace) -> int:
    registry = Registry(args.home)
    ids = chosen(registry, args)
    uri = args.mlflow or default_uri(registry.home)
    runs = [registry.get(i) for i in dict.fromkeys(ids)]
    for run in runs:  # said before the bar is drawn
        exportable(run)
    with tqdm(total=len(runs), desc="export", unit="run", file=sys.stderr) as bar:
        exported = export_runs(registry, runs, uri, on_run=lambda done, total, name: (
            bar.update(done - bar.n), bar.set_postfix_str(name[:40])))
        bar.update(len(runs) - bar.n)
    for e in exported:
        print(f"{e.run_id} → experiment '{e.experiment}', MLflow run {e.mlflow_run_id}"
              f"{' (updated)' if e.updated else ''}" + (f"; model {e.model_uri}" if e.model_uri else "")
              + (f"; {e.checked}" if e.checked else ""))
    command, links = where_to_look(uri, exported)
    print("see them:" + (f"\n  {command}" if command else "") + "".join(
        f"\n  {name}: {link}" for name, link in links.items()), file=sys.stderr)
    return 0
