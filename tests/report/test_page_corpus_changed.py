"""A rescore whose corpus changed since the run: scoring needs no corpus, the page does.

The page's document texts are checked against the run's corpus manifest; a
changed text stopped the page with a traceback and "a bug in evalframe's
report". It is the data, not a bug: said in one warning, with the command that
draws the page once the corpus is the run's again, and the run's other files
are written as the rescore's verdict says.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests import forkrun

DATA = Path(__file__).resolve().parents[2] / "evalframe" / "data" / "quickstart"


def evalframe(cwd: Path, *args: str) -> forkrun.subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cwd / ".cache"), "EVALFRAME_TRACKING": "none"}
    return forkrun.run(args, cwd=cwd, env=env, timeout=300)


def test_a_rescore_after_the_corpus_changed_says_why_the_page_is_missing(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes((DATA / "corpus.jsonl").read_bytes())
    data = ("+experiment=quickstart", f"corpus.path={corpus}", "report.html=true")
    made = evalframe(tmp_path, *data, "hydra.run.dir=run")
    assert made.returncode == 0, made.stderr
    # every document's text edited since the run
    lines = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    corpus.write_text(
        "".join(json.dumps({**d, "text": d["text"] + " (edited)"}) + "\n" for d in lines),
        encoding="utf-8",
    )
    done = evalframe(tmp_path, "rescore", "run", "--out", "again")
    assert done.returncode == 0, done.stderr  # the verdict: the run's numbers stand
    assert "Traceback" not in done.stderr and "a bug in" not in done.stderr
    warning = next(x for x in done.stderr.splitlines() if "report.html was not written" in x)
    assert "is not the one the corpus was read with" in warning
    assert "`evalframe report again` draws the page once the corpus is the one" in warning
    again = tmp_path / "again"
    assert not (again / "report.html").exists()
    assert json.loads((again / "metrics.json").read_text()) == json.loads(
        (tmp_path / "run" / "metrics.json").read_text()
    )
