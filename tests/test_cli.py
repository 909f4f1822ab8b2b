"""The CLI: summaries, reports, and exit code 2 with a clear message on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.cli import main
from core.paths import REPO_ROOT
from tests.helpers import semeval_rows, write_jsonl


def test_data_check_prints_counts(tmp_path, capsys):
    path = write_jsonl(tmp_path / "t.jsonl", semeval_rows(10, (0, 1)))
    assert main(["data", "check", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["class_counts"]["train"]["human"] == 10 and "val" not in info["class_counts"]  # nothing set aside
    assert "bloomz" in info["absent_classes"]


@pytest.mark.parametrize("argv, message", [
    (["data", "check", "/no/such/file.jsonl"], "File not found"),
    (["data", "check"], "required"),
    (["data", "check", "builtin", "--bogus"], "unrecognized arguments"),
    (["explore", "builtin", "--out", "x", "--map", "tsne"], "invalid choice"),
])
def test_bad_usage_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_malformed_file_exits_2_naming_the_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a", "label": 0}\n{oops\n')
    assert main(["data", "check", str(path)]) == 2
    assert "malformed JSON on line 2" in capsys.readouterr().err


def test_explore_writes_report_and_summary(m4_dir, tmp_path):
    out = tmp_path / "report"
    code = main(["explore", str(m4_dir / "train.jsonl"), "--test", str(m4_dir / "dev.jsonl"), "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["class_counts"]["test"]["human"] == 14
    assert set(summary["kl_per_class"]) == {"human", "chatGPT", "cohere", "davinci", "dolly"}
    assert all(v > 0 for v in summary["kl_per_class"].values())
    assert summary["length_quantiles"]["human"]["tokens"]["0.5"] > 10
    assert len(summary["top_ngrams"]["2"]["chatGPT"]) == 15
    html = (out / "report.html").read_text()
    assert "vegaEmbed" in html and "data:image/png;base64" in html
    assert "http://" not in html.split("<script>")[0] and "cdn.jsdelivr" not in html


def test_python_dash_m_entry_point(tmp_path):
    """`python -m core` runs as a program and maps bad input to exit code 2."""
    result = subprocess.run([sys.executable, "-m", "core", "data", "check", str(tmp_path / "none.csv")],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "error: File not found" in result.stderr


def test_help_and_usage_errors_need_no_torch():
    """The parser is built from the config's fields and the method catalog alone, so `python -m core --help`
    and a usage error return without importing torch or transformers (seconds on a laptop)."""
    probe = ("import sys\nfrom core.cli import build_parser, main\nbuild_parser()\n"
             "code = main(['train', '--fraction', 'x'])\n"
             "print(code, 'torch' in sys.modules, 'transformers' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["2", "False", "False"], result.stderr


def test_the_parser_names_every_backend_and_method():
    from core.cli.options import SWEPT, Parser, add_backend_args
    from core.runs.backends import NAMES, backend
    from core.train import METHODS
    from core.train.catalog import CATALOG, VARIANTS

    parser = Parser()
    add_backend_args(parser)
    assert next(a for a in parser._actions if a.dest == "backend").choices == list(NAMES) == ["local", "ray"]
    assert [backend(name).name for name in NAMES] == list(NAMES)  # each table entry is the backend of its name
    # one table of methods: each method object is the catalog entry's class, with its title and variants
    assert list(METHODS) == list(CATALOG)
    assert all((m.name, m.title, m.variants) == (name, CATALOG[name].title, CATALOG[name].variants)
               for name, m in METHODS.items())
    assert VARIANTS == ("generator", "adversarial", "unlabeled_limit") and SWEPT["generator"] == "--generators"
    assert SWEPT["unlabeled_limit"] == "--unlabeled-limits"
    assert SWEPT["adversarial"] == "--adversarial"  # on/off: `--adversarial on off`


def test_a_sweep_crosses_gan_berts_unlabeled_pool_sizes_and_leaves_other_methods_one_run(tiny_backbone, studio_home):
    from core.cli.options import Parser, add_config_args, sweep_of
    from core.errors import InputError
    from core.train import TrainConfig
    from core.train.sweep import parse_limits

    parser = Parser()
    add_config_args(parser, sweep=True)
    args = parser.parse_args(["--train", "builtin", "--methods", "ganbert", "features-lr", "--generators", "noise",
                              "--unlabeled-limits", "0", "1000", "all", "--per-class", "5", "--seeds", "0",
                              "--frozen", "--max-len", "64", "--backbone", str(tiny_backbone)])
    configs = sweep_of(args).configs(TrainConfig(frozen=True, max_len=64, backbone=str(tiny_backbone)), studio_home)
    pools = sorted((c.unlabeled_limit for c in configs if c.method == "ganbert"), key=lambda v: -1 if v is None else v)
    assert pools == [None, 0, 1000]
    assert [c.unlabeled_limit for c in configs if c.method == "features-lr"] == [None]
    assert parse_limits("all, 1000 0 1000") == [None, 1000, 0]
    with pytest.raises(InputError, match="'-5' is not a count of 0 or more, nor all"):
        parse_limits("all -5")
