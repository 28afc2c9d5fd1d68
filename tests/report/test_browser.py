"""report.html in a real headless Chromium (Debian's), driven by playwright.

The test loads the page from disk with the network flags the machine needs
and checks what a person sees: the headline table, the plots and the
per-query rows render, a row expands, sorting and filtering work, the drift
view shows, and the page asks for nothing but itself. It saves a screenshot
in its output folder.

Chromium is found on PATH (or /usr/bin/chromium), else installed with
``apt-get install chromium`` when the tests run as root with apt; when it
cannot be had the test is skipped and says why, never faked. playwright
drives that Chromium through ``executable_path``; it never downloads a
browser of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, Project, write_jsonl
from tests.report.test_pages import run

pytestmark = pytest.mark.slow

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> tuple[str | None, str]:
    """(path, "") or (None, why not)."""
    for candidate in (shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate, ""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        return None, "chromium is not installed, and apt-get as root is not available to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    last = ""
    # install; if the package lists are stale or absent, update them once and retry
    for command in (["install", "-y", "-q", "chromium"], ["update", "-q"],
                    ["install", "-y", "-q", "chromium"]):  # fmt: skip
        try:
            proc = subprocess.run(
                [apt, *command], env=env, capture_output=True, text=True, timeout=900
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"`apt-get {' '.join(command)}` failed: {exc}"
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        last = lines[-1] if lines else f"exit code {proc.returncode}"
        if command[0] == "install" and proc.returncode == 0 and Path("/usr/bin/chromium").is_file():
            return "/usr/bin/chromium", ""
    return None, f"`apt-get install chromium` failed: {last}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'"
    )
    path, why = find_chromium()
    if path is None:
        pytest.skip(f"no Chromium for the browser test: {why}")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=path, headless=True, args=FLAGS)
        yield chromium
        chromium.close()


def open_page(browser: Any, html: Path) -> tuple[Any, list[str], list[str]]:
    """The page loaded from disk, with every request it makes and every script error."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    requests: list[str] = []
    errors: list[str] = []

    def route(r: Any) -> None:
        requests.append(r.request.url)
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            r.abort()  # nothing may leave the machine; the assertion below names it

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    return page, requests, errors


def test_the_run_page_renders_and_its_rows_expand(
    browser: Any, project: Project, tmp_path: Path
) -> None:
    run(project, "before")
    docs = [{**d, "text": "Gates compare metrics."} if d["id"] == "cache" else d for d in CORPUS]
    write_jsonl(project.corpus, docs)
    run(project, "after", baseline=str(project.root / "before"))
    html = project.root / "after" / "report.html"
    page, requests, errors = open_page(browser, html)

    assert requests == [html.as_uri()]  # the page itself, nothing else
    assert errors == []
    assert "PASSED" in page.inner_text("#verdict")
    headline = page.locator("#headline tbody tr")
    assert headline.count() == 3  # R@5, RR, nDCG@10
    assert headline.first.inner_text().startswith("R@5")
    for plot in ("#plot-curves", "#plot-slices", "#plot-scores", "#plot-deltas"):
        box = page.locator(f"{plot} svg").bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100, plot

    rows = page.locator("#q-table tbody.q")
    assert rows.count() == len(CORPUS)
    detail = rows.nth(0).locator("tr.detail")
    assert not detail.is_visible()
    rows.nth(0).locator("button.toggle").click()
    assert detail.is_visible()
    assert "Expected" in detail.inner_text() and detail.locator("table.ranked tr").count() >= 2
    assert rows.nth(0).locator("button.toggle").get_attribute("aria-expanded") == "true"

    page.select_option("select[data-filter=status]", "–")  # the negative example
    assert page.locator("#q-table tbody.q:visible").count() == 1
    assert page.inner_text("#q-count") == f"1 of {len(CORPUS)} queries shown"
    page.select_option("select[data-filter=status]", "")
    page.click("#q-table th[data-col='2'] button")  # sort by query id, then reverse it
    page.click("#q-table th[data-col='2'] button")
    first = page.locator("#q-table tbody.q").first.locator("td").nth(2).inner_text()
    assert first == "4"

    assert page.locator("#drift").is_visible()
    assert "Pass → fail (1)" in page.inner_text("#drift")
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert requests == [html.as_uri()]  # expanding, sorting and filtering fetched nothing


def test_a_large_runs_drill_downs_are_filled_in_when_expanded(
    browser: Any, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past querytable.LAZY_OVER the drill-downs are JSON; expanding builds them, once."""
    from evalframe.report import querytable
    from evalframe.report.page import write_run_report

    run(project, "alpha")
    monkeypatch.setattr(querytable, "LAZY_OVER", 1)
    html = write_run_report(project.root / "alpha", out=project.root / "lazy")["report_html"]
    page, requests, errors = open_page(browser, html)
    assert requests == [html.as_uri()] and errors == []
    rows = page.locator("#q-table tbody.q")
    detail = rows.nth(0).locator("tr.detail")
    assert not detail.is_visible() and detail.get_attribute("data-lazy") == "0"
    rows.nth(0).locator("button.toggle").click()
    assert detail.is_visible() and detail.get_attribute("data-lazy") is None
    assert "Expected" in detail.inner_text() and detail.locator("table.ranked tr").count() >= 2
    rows.nth(0).locator("button.toggle").click()  # closed, and opened again: the same rows
    rows.nth(0).locator("button.toggle").click()
    assert detail.locator("table.ranked").count() == 1
    page.click("[data-expand=all]")
    assert page.locator("#q-table tr.detail:visible").count() == len(CORPUS)
    assert page.locator("#q-table tr.detail[data-lazy]").count() == 0
    assert errors == []


def test_the_multi_run_page_renders(browser: Any, project: Project, tmp_path: Path) -> None:
    from evalframe.app.cli import main

    run(project, "alpha")
    run(project, "beta", depth=3)
    out = tmp_path / "report"
    assert main(["report", str(project.root / "alpha"), "--out", str(out),
                 str(project.root / "beta")]) == 0  # fmt: skip
    page, requests, errors = open_page(browser, out / "report.html")
    assert requests == [(out / "report.html").as_uri()] and errors == []
    assert page.locator("table.runs tbody tr").count() == 2
    box = page.locator("#plot-curves svg").bounding_box()
    assert box is not None and box["height"] > 100
    page.screenshot(path=str(tmp_path / "multi.png"), full_page=True)


def test_adks_query_table_fits_a_laptops_window(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADK's query table (ids like api_understanding:01, a benchmark and a kind column,
    five metrics and the failure category) was wider than a 1280-pixel window, and the
    failure column was cut off. Ids and slice values now wrap at `:`, `/` and `_`."""
    import evalframe

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))
    result = evalframe.run("adk", ["tracking=none"], output_dir="adk", progress=False)
    page, _, errors = open_page(browser, result.path / "report.html")
    page.set_viewport_size({"width": 1280, "height": 900})
    assert errors == []
    wide, room = page.evaluate(
        "() => { const t = document.querySelector('#q-table');"
        " return [t.scrollWidth, t.parentElement.clientWidth]; }"
    )
    assert wide <= room, (wide, room)
    failure = page.locator("#q-table th", has_text="failure").bounding_box()
    assert failure is not None and failure["x"] + failure["width"] <= 1280
    # the break opportunities are not text: the id reads, sorts and filters as it was
    first = page.locator("#q-table tbody.q").first.locator("td").nth(2).inner_text()
    assert first == "api_understanding:01"
