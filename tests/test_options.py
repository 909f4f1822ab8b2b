"""One description of the options: every TrainConfig field has a CLI flag with the config's default, and the
statuses docs/architecture.md lists are the lifecycle's."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from core.cli import build_parser
from core.cli.options import SWEPT
from core.data import CleaningConfig
from core.paths import REPO_ROOT
from core.runs import FINISHED, MOVES, IllegalMove, Registry, Status
from core.train import TrainConfig
from core.train.catalog import CATALOG
from core.train.settings import default_of


def actions(command: str) -> dict[str, object]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {a.dest: a for a in sub._actions}


def settable_fields():
    """Every field a flag sets: TrainConfig's own (its data has the data flags), each method's, and the cleaning
    toggles."""
    own = [f for entry in CATALOG.values() for f in fields(entry.params)]
    return ([f for f in fields(TrainConfig) if f.name not in ("data", "cleaning", "params")] + own
            + list(fields(CleaningConfig)))


@pytest.mark.parametrize("command", ["train", "sweep"])
def test_every_config_field_has_a_flag_with_the_configs_default(command):
    flags = actions(command)
    missing = [f.name for f in settable_fields() if f.name not in flags]
    assert not missing, f"no {command} flag for {missing}"
    for f in settable_fields():
        if command == "sweep" and f.name in SWEPT:
            continue  # lists there, with the sweep's own defaults
        cli_default = flags[f.name].default
        expected = default_of(f)
        assert (tuple(cli_default) if isinstance(expected, tuple) else cli_default) == expected, f.name
    for name in ("train", "test", "val", "unlabeled"):  # the data field's flags
        assert name in flags


def test_a_config_from_no_flags_but_the_data_is_the_default_config():
    from core.cli.options import config_from_args

    args = build_parser().parse_args(["train", "--train", "builtin"])
    assert config_from_args(args) == TrainConfig()


def test_the_architecture_page_lists_the_lifecycles_statuses():
    readme = (REPO_ROOT / "docs" / "architecture.md").read_text()
    listed = re.search(r"Statuses: (.+?)\.", readme.replace("\n", " ")).group(1)
    assert re.findall(r"\b[a-z]+\b", listed.replace(" and ", " ")) == [s.value for s in Status]


def test_the_lifecycle_table_allows_the_documented_moves():
    active = [s for s in Status if MOVES[s]]
    assert [s.value for s in active] == ["queued", "starting", "running"]
    assert all(Status.INTERRUPTED in MOVES[s] for s in active)
    assert MOVES[Status.RUNNING] >= {Status.DONE, Status.FAILED, Status.CANCELLED, Status.DIVERGED}
    assert Status.DONE not in MOVES[Status.QUEUED] and Status.RUNNING not in MOVES[Status.QUEUED]
    assert set(FINISHED) == {"done", "failed", "cancelled", "diverged", "interrupted"}


@pytest.mark.parametrize("moves, refused", [
    ([], "done"),  # queued → done skips starting and running
    (["claim"], "diverged"),  # starting → diverged: it never trained
    (["claim", "running", "done"], "failed"),  # an ended run stays ended
    (["claim", "running", "done"], "running"),
])
def test_the_registry_refuses_illegal_moves(moves, refused, studio_home):
    registry = Registry(studio_home)
    run_id = registry.create(TrainConfig(frozen=True))
    for move in moves:
        if move == "claim":
            assert registry.claim(run_id)
        elif move == "running":
            registry.mark_running(run_id, 1, "CPU")
        else:
            registry.finish(run_id, move)
    before = registry.get(run_id).status
    with pytest.raises(IllegalMove, match=f"cannot become {refused}"):
        if refused == "running":
            registry.mark_running(run_id, 1, "CPU")
        else:
            registry.finish(run_id, refused)
    assert registry.get(run_id).status == before
