"""docs/results.md, written from the committed records and nothing else: every figure in it comes from
`bench/records/*.jsonl` (the runs of the studies in `bench/studies/`, and the measurements of `bench/speed/` and
`bench/gpu/`), summarised by `core.compare` as Compare and the CLI summarise them. The hand-written conclusions
(bench/conclusions.md) open the page; each names the table it rests on.

The records are restored into a scratch studio home (`restore.py`), each section prints its tables from there
(nothing trains), and the page is written whole (`page.py`). tests/test_docs.py regenerates it and fails when the
committed page differs, so no figure can drift from its record.

Run: .venv/bin/python -m bench.report [--out docs/results.md] [--readme README.md]
"""
