"""The shape of `core/` and `bench/`, read from the source: the layers' import contracts (pyproject.toml, checked by
import-linter) hold and name every sub-package, no import cycle, no large module, short pages, one module that
spells a run folder's file names, and no torch where runs are only listed or compared."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from core.paths import REPO_ROOT
from core.runs.lifecycle import Status

CORE = REPO_ROOT / "core"
BENCH = REPO_ROOT / "bench"
CONTRACTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def layered(container: str) -> set[str]:
    """The modules and sub-packages a layers contract places in `container`."""
    contract = next(c for c in CONTRACTS if c["type"] == "layers" and c["containers"] == [container])
    return {name.strip() for layer in contract["layers"] for name in re.split(r"[|:]", layer)}


def imports_of(package: Path, prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    """Every module of a package and the modules it imports that start with one of `prefixes`, at module level or
    inside functions."""
    graph = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(prefixes):
                targets.add(node.module)
                targets |= {f"{node.module}.{a.name}" for a in node.names}  # `from bench.studies import trec`
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith(prefixes)}
        graph[name] = targets
    return graph


def core_imports() -> dict[str, set[str]]:
    return {m: {t for t in ts if t.startswith("core")} for m, ts in imports_of(CORE, ("core",)).items()}


def first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle among the graph's modules, as the path round it; None without one. An import names a module,
    or a name inside one (resolved to the module), and a module's own package does not count."""
    modules = set(graph)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges = {m: {r for t in ts if (r := resolve(t))} - {m} for m, ts in graph.items()}
    edges = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in edges.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                return path[path.index(t):] + [m, t] if t in path else path + [m, t]
            if t not in state and (found := visit(t, path + [m])):
                return found
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m, [])):
            return found
    return None


def test_the_layers_import_only_downward():
    """The contracts in pyproject.toml, as `make lint` checks them: core's layers, bench's rooms, and neither the
    benches nor core reaching up into the pages or Streamlit."""
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.count(" KEPT") == len(CONTRACTS)


def test_no_import_cycle():
    cycle = first_cycle(core_imports())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_sub_packages_exist_and_modules_stay_small():
    packages = {p.parent.name for p in CORE.glob("*/__init__.py")}
    assert {"data", "explore", "train", "runs", "compare", "cli"} <= packages
    assert packages <= layered("core"), f"a sub-package without a layer: {packages - layered('core')}"
    big = {str(p.relative_to(REPO_ROOT)): n for p in CORE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not big, big


def test_bench_is_rooms_of_small_modules_without_cycles():
    """bench/ had grown into 25 modules and 5k lines in one flat folder, each putting the project on sys.path by
    hand. Now its studies, speed benches, GPU check and report live in rooms of their own; only the shared base
    (sample runs and their records, the one way to write a figure, the records' migration) stays at the top."""
    rooms = layered("bench")
    assert {p.parent.name for p in BENCH.glob("*/__init__.py")} == {r for r in rooms if (BENCH / r).is_dir()}
    top = {p.name for p in BENCH.glob("*.py")}
    assert top == {"__init__.py"} | {f"{r}.py" for r in rooms if not (BENCH / r).is_dir()}, top
    big = {str(p.relative_to(REPO_ROOT)): n for p in BENCH.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 400}
    assert not big, big
    cycle = first_cycle(imports_of(BENCH, ("bench",)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
    for path in BENCH.rglob("*.py"):
        assert not re.search(r"sys\.path\.(insert|append)", path.read_text()), (
            f"{path.relative_to(REPO_ROOT)} edits sys.path")


def test_the_cycle_finder_finds_one():
    """The cycle checks above pass on a graph without one; this is the check that they would fail on one."""
    assert first_cycle({"a.x": {"a.y"}, "a.y": {"a.z.f"}, "a.z": {"a.x"}}) == ["a.x", "a.y", "a.z", "a.x"]
    assert first_cycle({"a.x": {"a.y"}, "a.y": set()}) is None


def test_pages_stay_layout():
    """Pages are short and build nothing of the core themselves (one registry per session comes from app.py)."""
    for page in (REPO_ROOT / "pages").glob("*.py"):
        source = page.read_text()
        assert len(source.splitlines()) < 180, page.name
        assert "Registry(" not in source, f"{page.name} opens its own registry"
        assert "import sqlite3" not in source and "torch" not in source, page.name


def test_only_the_run_folder_spells_its_file_names():
    names = ('"result.json"', '"test_predictions.parquet"', '"train.log"', '"checkpoint"')
    spelled = [f"{p.relative_to(REPO_ROOT)}: {n}" for p in CORE.rglob("*.py") if p.name != "folder.py"
               for n in names if n in p.read_text()]
    assert not spelled, spelled


def test_app_builds_the_navigation_before_any_slow_work():
    """On a cold start the sidebar lists the pages, not file names, while the corpus is generated: the
    navigation comes before any import of `core` (torch takes seconds)."""
    source = (REPO_ROOT / "app.py").read_text()
    assert source.index("st.navigation(") < source.index("from core") < source.index("= default_dataset(")
    assert source.index("= default_dataset(") < source.index("nav.run()") and "st.progress(" in source


STATUS_IN_SQL = re.compile(r"'(%s)'" % "|".join(s.value for s in Status))


def status_literals(path) -> list[str]:
    """Strings that spell a run status, in code or inside SQL, other than a field's name (a dict key, an
    index, a .get argument: a features event's "done" count is not the status)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            names |= {id(k) for k in node.keys if k is not None}
        elif isinstance(node, ast.Subscript):
            names.add(id(node.slice))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args):
            names.add(id(node.args[0]))
    values = {s.value for s in Status}
    return [f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in names
            and (node.value in values or STATUS_IN_SQL.search(node.value))]


def test_statuses_are_spelled_only_by_the_lifecycle():
    """Every status is written through the lifecycle's moves and named through `Status`: a status string
    anywhere else (about 40 sat in 14 files) could drift from the table."""
    sources = [p for p in [*CORE.rglob("*.py"), *(REPO_ROOT / "pages").glob("*.py"), REPO_ROOT / "app.py"]
               if p.name != "lifecycle.py"]
    assert [hit for path in sources for hit in status_literals(path)] == []


def test_listing_and_comparing_runs_import_no_torch():
    """`python -m core runs` took 10 s, nearly all of it importing torch, transformers and scikit-learn for
    method names, and `data check` 9 s. The registry, Compare, the method specs and the CLI's `data check`
    and registry commands read without them; a fresh interpreter shows what an import really pulls in."""
    light = ["core.cli", "core.cli.data", "core.cli.records", "core.runs.registry", "core.runs.queue",
             "core.runs.estimate", "core.compare.tables", "core.compare.charts", "core.train.methods",
             "core.train.checkpoint"]
    probe = (f"import sys, {', '.join(light)}; from core.train import METHODS, run_label; "
             "print(sorted(m for m in ('torch', 'transformers', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
