"""The machine figures the estimates rest on live in one file with their source, and the benches write them there."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date

import pytest

from core import calibration
from core.calibration import FILE, MEASURED, read
from core.paths import REPO_ROOT


def test_every_figure_says_what_it_is_where_when_and_on_what_it_was_measured():
    assert len(MEASURED) >= 15
    for name, figure in MEASURED.items():
        assert isinstance(figure.value, float) and figure.value > 0, name
        assert len(figure.what) > 20 and figure.machine, name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", figure.when), name
        if figure.source.startswith("bench/"):  # a bench that is here to run again
            assert (REPO_ROOT / figure.source.split()[0]).is_file(), name


def test_the_estimates_read_the_figures_from_the_file():
    from core.runs import encoding_speed, estimate
    from core.train import memory
    from core.train.methods import METHODS, specs

    assert specs.CHECKPOINT_SLOWDOWN == MEASURED["checkpoint_slowdown"].value
    assert METHODS["finetune"].cpu_speed == MEASURED["minilm_training_speed"].value
    assert METHODS["ganbert"].head_speed == MEASURED["ganbert_head_speed"].value
    assert METHODS["adapter"].cpu_speed == MEASURED["adapter_training_speed"].value
    assert memory.PER_TOKEN_UNIT == MEASURED["per_token_unit"].value
    assert estimate.STARTUP == MEASURED["worker_startup"].value
    assert encoding_speed.FALLBACK["fp32"] == MEASURED["frozen_encoding_fp32"].value * 128
    used = "".join(p.read_text() for p in (REPO_ROOT / "core").rglob("*.py"))
    unread = [name for name in MEASURED if f'measured("{name}")' not in used]
    assert not unread, f"figures no code reads: {unread}"


def test_a_bench_writes_its_figures_with_its_source_date_and_machine(tmp_path, capsys):
    from bench.calibrate import record

    path = tmp_path / "calibration.json"
    shutil.copy(FILE, path)
    before = json.loads(path.read_text())
    record({"checkpoint_slowdown": 1.61, "per_token_unit": 150.25, "tfidf_fit_per_text_and_class": 4.41234567e-6},
           "bench/speed/memory.py", path, on="a test CPU")
    after = read(path)
    assert after["checkpoint_slowdown"].value == 1.61 and after["per_token_unit"].value == 150.25
    assert after["tfidf_fit_per_text_and_class"].value == 4.41235e-6  # six figures, however small
    assert after["checkpoint_slowdown"].when == date.today().isoformat()
    assert after["checkpoint_slowdown"].machine == "a test CPU"
    assert after["checkpoint_slowdown"].what == before["checkpoint_slowdown"]["what"]  # what it is stays
    written = ("checkpoint_slowdown", "per_token_unit", "tfidf_fit_per_text_and_class")
    assert {k: v for k, v in json.loads(path.read_text()).items() if k not in written} == {
        k: v for k, v in before.items() if k not in written}
    assert "checkpoint_slowdown 1.61" in capsys.readouterr().out
    with pytest.raises(KeyError, match="no figure named 'new_speed'"):
        record({"new_speed": 3.0}, "bench/speed/train.py", path)
    assert read(path)["checkpoint_slowdown"].value == 1.61  # a refused write leaves the file as it was


def test_the_training_bench_names_the_figures_it_measured():
    from bench.speed.train import calibration as figures

    summary = {"texts_per_s_128": {"finetune": 27.5, "trainer": 20.0},
               "levers_256": {"as shipped": {"seconds": 51.8}, "attention dropout 0": {"seconds": 36.4}}}
    assert figures(summary) == {"attention_dropout_slowdown": pytest.approx(1.423, 1e-3)}
    assert figures({"texts_per_s_128": {"finetune": 27.5}}) == {}  # an idle machine's speed is not the busy figure


def test_a_malformed_file_is_an_error_at_once(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"forward_speed": {"value": 49.0}}))
    with pytest.raises(TypeError):
        read(path)
    assert calibration.measured("forward_speed") == MEASURED["forward_speed"].value
