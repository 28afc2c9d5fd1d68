"""Screenshots of report.html for docs/reports.md (docs/img/report-*.png).

Runs the quickstart, then the quickstart again against it with a few corpus
passages rewritten and BM25's k1 changed (so the drift view has something to
show), and photographs parts of both pages in Debian's headless Chromium:

    .venv/bin/python tools/report_screenshots.py

Needs playwright (the test extra) and /usr/bin/chromium (apt-get install chromium).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
REWRITTEN = ("readme#golden-set", "metrics#tie-order", "readme#quickstart")


def evalframe(*args: str) -> None:
    env = {**os.environ, "EVALFRAME_TRACKING": "none"}
    subprocess.run([sys.executable, "-m", "evalframe", *args], check=False, env=env,
                   stdout=subprocess.DEVNULL, cwd=ROOT)  # fmt: skip


def shrink(path: Path) -> None:
    """Fewer colours: a screenshot of text and flat plots needs no more than 64."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=64).save(path, optimize=True)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="evalframe-shots-"))
    corpus = ROOT / "evalframe" / "data" / "quickstart" / "corpus.jsonl"
    docs = [json.loads(line) for line in corpus.read_text().splitlines()]
    for doc in docs:
        if doc["id"] in REWRITTEN:
            doc["text"] = doc["text"][: len(doc["text"]) // 3] + " (shortened in a rewrite)"
    (work / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    evalframe("+experiment=quickstart", f"hydra.run.dir={work / 'before'}")
    evalframe("+experiment=quickstart", f"corpus.path={work / 'corpus.jsonl'}",
              "retriever.k1=0.9", f"baseline={work / 'before'}",
              f"hydra.run.dir={work / 'after'}")  # fmt: skip
    page_file = work / "after" / "report.html"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(page_file.as_uri())
        shots = {
            "report-header.png": "header",
            "report-metrics.png": "#metrics",
            "report-plots.png": "#plots",
        }
        for name, selector in shots.items():
            page.locator(selector).screenshot(path=str(OUT / name))
        page.evaluate("window.scrollTo(0, 0)")  # boxes are then page coordinates, as clip wants
        drift = page.locator("#drift")
        box = drift.bounding_box()
        assert box is not None
        page.screenshot(path=str(OUT / "report-drift.png"), full_page=True,
                        clip={**box, "height": min(box["height"], 1500)})  # fmt: skip
        page.locator("#q-table tbody.q").nth(1).locator("button.toggle").click()
        page.evaluate("window.scrollTo(0, 0)")
        queries = page.locator("#queries")
        box = queries.bounding_box()
        assert box is not None
        page.screenshot(path=str(OUT / "report-queries.png"), full_page=True,
                        clip={**box, "height": min(box["height"], 1100)})  # fmt: skip
        browser.close()
    for png in OUT.glob("report-*.png"):
        shrink(png)
        print(png.relative_to(ROOT), png.stat().st_size // 1024, "KB")


if __name__ == "__main__":
    main()
