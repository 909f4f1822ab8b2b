"""`make screenshots`: the README's pictures, drawn by the app itself in headless Chromium.

A scratch studio home on a small built-in corpus (300 texts a class to train on, 100 to test on) and a small
frozen grid trained first through `core` (the head, GAN-BERT G1 and its control, the two references, at 5 and 20
labels a class, seeds 0-2, on the bundled MiniLM), so that Compare and Classify have runs to show; then
`streamlit run app.py` on a free port, each page opened as a new user would, and its screenshot written to
docs/img/<page>.png at 1,400 × 1,000 px.

Run: .venv/bin/python docs/screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.environment import prepare  # noqa: E402

prepare()

from core.data import (  # noqa: E402
    CleaningConfig,  # noqa: E402
    CorpusConfig,
    DataSpec,
)
from core.runs import Registry, Workspace, execute_run, remember  # noqa: E402
from core.train import Sweep, TrainConfig, amounts  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CORPUS = CorpusConfig(train_per_class=300, test_per_class=100)
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def trained_grid(home: Path) -> None:
    """The grid the pictures show, trained in this process into the scratch home."""
    registry = Registry(home)
    remember(registry, Workspace(DataSpec(builtin=CORPUS), CleaningConfig()))
    base = TrainConfig(data=DataSpec(builtin=CORPUS), frozen=True)
    sweep = Sweep(("finetune", "ganbert", "features-lr", "tfidf-lr"), {"generator": ("noise",),
                                                                      "adversarial": (True, False)},
                  amounts([], [5, 20]), (0, 1, 2))
    for config in sweep.configs(base, home):
        run_id = registry.create(config)
        registry.claim(run_id)
        execute_run(registry, run_id)
        print(f"trained {registry.get(run_id).name}: {registry.get(run_id).status}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shoot(home: Path, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                               "--server.address", "127.0.0.1", "--server.headless", "true"], cwd=ROOT,
                              env={**os.environ, "STUDIO_HOME": str(home)}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(180_000)
            page.goto(f"http://127.0.0.1:{port}")

            def visit(title: str, name: str, ready, show=None) -> None:
                """Open a page, wait until it is drawn, bring `show` (a heading or text) to the top, and shoot."""
                nav = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)
                nav.click()
                ready()
                page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for()
                page.wait_for_timeout(2500)
                if show is not None:
                    page.get_by_text(show).first.evaluate("e => e.scrollIntoView({block: 'start'})")
                    page.wait_for_timeout(1500)
                page.screenshot(path=str(out / f"{name}.png"))
                print(f"wrote {out / f'{name}.png'}", flush=True)

            def opened(label: str):
                def ready() -> None:
                    page.get_by_text(label, exact=True).first.click()
                    page.get_by_role("button", name="Launch").wait_for()
                return ready

            page.get_by_role("heading", name="GAN-BERT Studio").wait_for()
            visit("Home", "home", lambda: page.get_by_text("Latest verdict").wait_for())
            visit("Data", "data", lambda: page.get_by_text("Current:").wait_for())
            visit("Explore", "explore", lambda: page.locator(".vega-embed").first.wait_for())
            visit("Train", "train", opened("New runs"))
            visit("Compare", "compare", lambda: page.locator(".vega-embed").first.wait_for(),
                  show="Groups over seeds (mean and 95% CI)")

            def classified() -> None:
                page.get_by_label("Text", exact=True).fill("Additionally, it is worth noting that compost feeds "
                                                           "the soil and keeps the tomato plants healthy.")
                page.get_by_label("Text", exact=True).press("Control+Enter")
                page.get_by_text("Predicted").first.wait_for()
            visit("Classify", "classify", classified)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--home", type=Path, help="a studio home the grid was trained into before (kept): shoot only")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: `make browser` installs Debian's", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.home is not None:
        if not (args.home / "studio.db").exists():
            trained_grid(args.home)
        shoot(args.home, args.out)
        return 0
    with tempfile.TemporaryDirectory() as home:
        trained_grid(Path(home))
        shoot(Path(home), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
