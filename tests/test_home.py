"""The studio home is read once, at the entry points, and passed down (issue 97, item 3): a run trains into the home
it is given whatever the environment says, a lookup makes nothing, and a backbone's config that cannot be read is
said so, where a deleted one still names its runs."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from core.backbone import BackboneError, depth, prepare_backbone, resolve_backbone
from core.backbone.encode import load_tokenizer
from core.backbone.facts import config_of, sentence_pooling
from core.backbone.packaged import CONVERTED_DIR, DONE, SMOLLM2, STAGES
from core.paths import REPO_ROOT
from core.runs import Registry, RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, resolve, run_label
from tests.helpers import DATA, make_tiny_llama, need_smollm2

# the modules that start a process of the studio's, and only they, read the studio home from the environment
ENTRY_POINTS = {"app.py", "core/cli/__init__.py", "core/runs/worker.py", "core/runs/ray/dispatch.py",
                "core/runs/ray/task.py", "core/runs/tracking/detector.py"}
# and these name it to hand a child process its home, or (core.paths) say where it is read from
LAUNCHERS = {"core/paths.py", "core/runs/processes.py", "bench/gpu/check.py", "bench/speed/predict_memory.py",
             "docs/screenshots.py"}


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    return make_tiny_llama(tmp_path_factory.mktemp("llama"))


def python_files() -> list[Path]:
    """Every module of the studio's own: the package, the pages, the benches and the docs' scripts."""
    folders = ("core", "pages", "bench", "docs")
    return [p for d in folders for p in (REPO_ROOT / d).rglob("*.py")] + [REPO_ROOT / "app.py"]


def test_only_the_entry_points_read_the_home_and_nothing_writes_it_into_the_environment():
    readers, writers = set(), []
    for path in python_files():
        name = str(path.relative_to(REPO_ROOT))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) \
                    == "home_from_environment":
                readers.add(name)
            if isinstance(node, ast.Constant) and node.value == "STUDIO_HOME" and name not in LAUNCHERS:
                readers.add(name)  # read by name (the Ray task's own fallback on a node)
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ" for t in targets):
                    writers.append(f"{name}: {ast.unparse(node)}")
    assert readers <= ENTRY_POINTS, readers - ENTRY_POINTS
    # MLflow's own variable put back as it was, the one write left (`core.runs.tracking.store.tracking_at`)
    assert writers == ["core/runs/tracking/store.py: os.environ['MLFLOW_TRACKING_URI'] = variable"], writers


def test_a_run_trains_into_the_home_it_is_given_not_the_one_the_environment_names(tiny_backbone, tmp_path,
                                                                                  studio_home):
    given = tmp_path / "given"
    config = resolve(TrainConfig(data=DATA, method="features-lr", frozen=True, backbone=str(tiny_backbone),
                                 per_class=4, fraction=None, max_len=32), given)
    result = train_into(config, RunFolder(tmp_path / "run"), given, lambda e: None, lambda: False)
    assert result["test"]["n"] > 0
    assert list((given / "features").iterdir()) and (given / "corpus").is_dir()  # its store and corpus cache
    assert not (studio_home / "features").exists() and not (studio_home / "corpus").exists()
    assert Registry(given).home == given and Registry(studio_home).home == studio_home
    with pytest.raises(TypeError):
        Registry()  # no home of its own choosing


def fake_conversion(tiny_llama: Path, made: list):
    def convert(source, folder, on_stage):
        made.append(folder)
        for i, stage in enumerate(STAGES):
            on_stage(i, len(STAGES), stage)
        shutil.copytree(tiny_llama, folder)
        (folder / DONE).write_text("{}")
    return convert


def test_looking_a_packaged_backbone_up_makes_nothing_and_preparing_it_converts_it_once(tiny_llama, tmp_path,
                                                                                      monkeypatch):
    """`resolve_backbone` had converted SmolLM2 (25 s) as it looked it up, the time estimate among its callers: now a
    lookup says where its folder is, a loader refuses a folder not made, and `prepare_backbone` makes it, once."""
    need_smollm2()
    from core.backbone import packaged

    made: list[Path] = []
    monkeypatch.setattr(packaged, "convert", fake_conversion(tiny_llama, made))
    home = tmp_path / "home"
    found = resolve_backbone(SMOLLM2, home=home)
    assert found.folder == home / CONVERTED_DIR / SMOLLM2 and not home.exists()  # nothing made, not even the home
    with pytest.raises(BackboneError, match="not converted into .* yet"):
        load_tokenizer(found)
    with pytest.raises(ValueError, match="converted under a studio home"):
        resolve_backbone(SMOLLM2, home=None)
    stages = []
    ready = prepare_backbone(SMOLLM2, home=home, on_stage=lambda *stage: stages.append(stage))
    assert ready == found and made == [found.folder] and len(stages) == len(STAGES)
    assert load_tokenizer(ready).pad_token_id is not None
    assert prepare_backbone(SMOLLM2, home=home) == found and len(made) == 1  # made once


def test_a_deleted_backbone_still_names_its_runs_and_an_unreadable_config_is_said_so(tiny_backbone, tmp_path,
                                                                                    studio_home, capsys):
    from core import compare
    from core.cli import main

    folder = tmp_path / "model"
    shutil.copytree(tiny_backbone, folder)
    config = TrainConfig(method="finetune", backbone=str(folder))
    assert depth(str(folder)) == (2, False) and config_of(str(folder))["num_hidden_layers"] == 2
    registry = Registry(studio_home)
    registry.create(config)
    (folder / "config.json").write_text("{ not json")
    with pytest.raises(BackboneError, match="cannot be read as a model's config"):
        config_of(str(folder))
    # said where the backbone is used; its runs are still named, listed and compared
    assert run_label(config, 10).startswith("BERT fine-tuning · model @")
    assert list(compare.distinct_names(registry.list()).values())[0].startswith("BERT fine-tuning · model")
    assert main(["runs", "--json"]) == 0 and "BERT fine-tuning" in capsys.readouterr().out
    (folder / "config.json").write_text(json.dumps([1, 2]))
    with pytest.raises(BackboneError, match="holds no model config"):
        config_of(str(folder))
    (folder / "config.json").write_text((tiny_backbone / "config.json").read_text())
    assert sentence_pooling(str(folder)) is None  # no 1_Pooling: not a sentence-transformers model
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert sentence_pooling(str(folder)) == "cls"
    (folder / "1_Pooling" / "config.json").write_text("{")
    with pytest.raises(BackboneError, match="cannot be read as a sentence-transformers pooling"):
        sentence_pooling(str(folder))
    shutil.rmtree(folder)  # gone: the run it trained is still named, by its method and its backbone as given
    assert config_of(str(folder)) == {} and depth(str(folder)) == (0, False) and sentence_pooling(str(folder)) is None
    assert run_label(config, 10).startswith("BERT fine-tuning · model @")
