"""Generated bad input (#16): whatever arrives, evalframe answers with an exit code, not a crash.

Hypothesis writes malformed TREC qrels and runs, JSON Lines golden sets and
corpora, and YAML experiment files, each mutated from a well-formed one (a
column dropped or doubled, a number replaced by a word or NaN, a byte that is
not UTF-8, a NUL, a BOM, a line cut short, a field of the wrong type). Each
goes through the same entry point a user types, in-process. The rules:

- the exit code is 0, 1 (a check failed) or 2 (the input is wrong): never 3;
- exit 2 comes with one paragraph that names the file (and the line, when
  the fault is on a line), and no traceback;
- nothing is left half-written.

Each family also has hand-written cases in the other modules of this folder;
this module is the net under them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalframe.app import cli
from tests import forkrun

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

QRELS = [b"q1 0 d1 1", b"q1 0 d2 0", b"q2 0 d3 2", b"q2 0 d1 1"]
RUN = [b"q1 Q0 d1 1 0.9 t", b"q1 Q0 d3 2 0.5 t", b"q2 Q0 d3 1 1.5 t", b"q2 Q0 d2 2 0.1 t"]
GOLDEN = [
    {"id": 1, "question": "how to install?", "expected_chunks": ["d1"]},
    {"id": 2, "question": "which exit code?", "expected_chunks": ["d2", "d3"]},
    {"id": 3, "question": "sync to phone?", "expected_chunks": []},
]
CORPUS = [{"id": f"d{i}", "text": f"document {i} about install and exit codes"} for i in (1, 2, 3)]

#: Replacements for one whitespace-separated token of a line.
BAD_TOKENS = [b"", b"x", b"NaN", b"inf", b"1e400", b"-", b"1.5", b"99999999999999999999", b"\xff",
              b"\x00", b"\xef\xbb\xbf", b"a\xc2\xa0b", b"\t", b"#", b"0x1"]  # fmt: skip


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[bytes]) -> bytes:
    """Well-formed lines with one to three faults put in."""
    out = [line.split(b" ") for line in lines]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(out) - 1))
        kind = draw(st.sampled_from(["token", "drop", "double", "cut", "bytes", "blank"]))
        tokens = out[i]
        if kind == "token" and tokens:
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[j] = draw(st.sampled_from(BAD_TOKENS))
        elif kind == "drop" and tokens:
            tokens.pop(draw(st.integers(0, len(tokens) - 1)))
        elif kind == "double" and tokens:
            tokens.append(tokens[-1])
        elif kind == "cut" and tokens:
            out[i] = tokens[: draw(st.integers(0, len(tokens)))]
        elif kind == "bytes":
            tokens.append(draw(st.binary(min_size=1, max_size=4)))
        else:
            out.insert(i, [])
    return b"\n".join(b" ".join(t) for t in out) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))


def one_paragraph_or_success(code: int, err: str, path: Path) -> None:
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert err.count("error: ") == 1, err
        assert str(path) in err or path.name in err, err


@FUZZ
@given(qrels=mutated_lines(QRELS), run=mutated_lines(RUN))
def test_trec_eval_never_crashes_on_malformed_files(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    qrels: bytes,
    run: bytes,
) -> None:
    folder = tmp_path_factory.mktemp("trec")
    q, r = folder / "qrels", folder / "run"
    q.write_bytes(qrels)
    r.write_bytes(run)
    code = cli.main(["trec-eval", "-m", "map", "-m", "ndcg_cut.10", str(q), str(r)])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert err.count("error: ") == 1, err
        assert re.search(rf"{re.escape(str(folder))}/(qrels|run)(:\d+(:\d+)?)?:", err), err


@st.composite
def mutated_jsonl(draw: st.DrawFn, records: list[dict[str, object]]) -> bytes:
    """JSON Lines with faults: a wrong type, a missing field, broken JSON, bad bytes."""
    recs = [dict(r) for r in records]
    lines: list[bytes] = []
    for rec in recs:
        fault = draw(st.sampled_from(["none", "none", "type", "missing", "json", "bytes", "extra"]))
        if fault == "type":
            key = draw(st.sampled_from(sorted(rec)))
            rec[key] = draw(
                st.one_of(
                    st.none(),
                    st.booleans(),
                    st.integers(-(10**30), 10**30),
                    st.floats(allow_nan=True),
                    st.text(max_size=5),
                    st.lists(st.integers(), max_size=2),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                )
            )
        elif fault == "missing":
            rec.pop(draw(st.sampled_from(sorted(rec))))
        text = json.dumps(rec).encode()
        if fault == "json":
            text = text[: draw(st.integers(0, len(text) - 1))]
        elif fault == "bytes":
            text += draw(st.sampled_from([b"\xff", b"\x00", b"\xc3"]))
        elif fault == "extra":
            text = draw(st.sampled_from([b"[]", b"1", b'"x"', b"null", b"{}"]))
        lines.append(text)
    return b"\n".join(lines) + b"\n"


@FUZZ
@given(golden=mutated_jsonl(GOLDEN), corpus=mutated_jsonl(CORPUS))
def test_golden_validate_never_crashes_on_malformed_jsonl(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    golden: bytes,
    corpus: bytes,
) -> None:
    folder = tmp_path_factory.mktemp("jsonl")
    g, c = folder / "golden.jsonl", folder / "corpus.jsonl"
    g.write_bytes(golden)
    c.write_bytes(corpus)
    code = cli.main(["golden", "validate", str(g), "--corpus", str(c), "--min-queries", "1"])
    err = capsys.readouterr().err
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert err.count("error: ") == 1, err
        assert re.search(rf"{re.escape(str(folder))}/(golden|corpus)\.jsonl(:\d+)?", err), err


EXPERIMENT = {
    "experiment": "fz",
    "depth": 5,
    "metrics": {"measures": ["R@5", "RR"]},
    "slices": None,
}


@st.composite
def mutated_settings(draw: st.DrawFn) -> dict[str, object]:
    """A run's settings with one value of the wrong kind or out of range."""
    cfg = json.loads(json.dumps(EXPERIMENT))
    key = draw(st.sampled_from(["depth", "metrics", "slices", "stats", "report", "output"]))
    value = draw(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-3, 3),
            st.floats(allow_nan=True),
            st.text(max_size=6),
            st.lists(st.text(max_size=4), max_size=2),
            st.just({"measures": ["nDCG@x"]}),
            st.just({"measures": []}),
            st.just({"bootstrap": -1}),
            st.just({"criterion": "P@99"}),
            st.just({"run_tag": "two words"}),
        )
    )
    if key == "output" and isinstance(value, dict):
        cfg["output"] = value
    else:
        cfg[key] = value
    return cfg


@FUZZ
@given(settings_=mutated_settings())
def test_bad_settings_are_config_errors_naming_a_key(settings_: dict[str, object]) -> None:
    from evalframe.core.errors import ConfigError
    from evalframe.pipeline.config import validate_experiment

    cfg = {
        **settings_,
        "dataset": {"name": "jsonl", "path": "golden.jsonl"},
        "corpus": None,
        "retriever": {"name": "run_file", "path": "run.trec"},
        "tracking": {"name": "none"},
    }
    if "output" not in settings_:
        cfg["output"] = {"dir": "out", "cache_dir": "cache"}
    elif isinstance(settings_["output"], dict):
        cfg["output"] = {"dir": "out", "cache_dir": "cache", **settings_["output"]}
    try:
        validate_experiment(cfg)
    except ConfigError as exc:
        rendered = exc.render()
    else:
        return
    assert rendered.startswith("error: ")
    assert "Traceback" not in rendered


def test_a_broken_experiment_file_is_located(tmp_path: Path) -> None:
    """A YAML experiment a user wrote, with a syntax error: exit 2, no Hydra traceback."""

    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("# @package _global_\nexperiment: mine\ndepth: [1, 2\n")
    proc = forkrun.run(["+experiment=mine", "tracking=none"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "mine.yaml" in proc.stderr


def single_faults(lines: list[bytes]) -> list[tuple[str, bytes]]:
    """Every well-formed file with exactly one token replaced or dropped: the corpus."""
    cases = []
    for i, line in enumerate(lines):
        tokens = line.split(b" ")
        for j in range(len(tokens)):
            variants = [(repr(bad), [*tokens[:j], bad, *tokens[j + 1 :]]) for bad in BAD_TOKENS]
            variants.append(("dropped", tokens[:j] + tokens[j + 1 :]))
            for what, changed in variants:
                body = [*lines[:i], b" ".join(changed), *lines[i + 1 :]]
                cases.append((f"line {i + 1} token {j + 1} {what}", b"\n".join(body) + b"\n"))
    return cases


def test_the_whole_single_fault_corpus_is_handled(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, object], None],
) -> None:
    """Every single fault in a qrels or a run file: exit 0 or 2, a located paragraph, no crash.

    The count is reported (``record_property``, and in the assertion message on
    failure) so a regression says how much of the corpus it broke.
    """
    good_q, good_r = tmp_path / "good_qrels", tmp_path / "good_run"
    good_q.write_bytes(b"\n".join(QRELS) + b"\n")
    good_r.write_bytes(b"\n".join(RUN) + b"\n")
    corpus = [("qrels", name, data) for name, data in single_faults(QRELS)]
    corpus += [("run", name, data) for name, data in single_faults(RUN)]
    broken: list[str] = []
    refused = 0
    for i, (which, name, data) in enumerate(corpus):
        path = tmp_path / f"{which}{i}"
        path.write_bytes(data)
        q, r = (path, good_r) if which == "qrels" else (good_q, path)
        try:
            code = cli.main(["trec-eval", "-m", "map", "-m", "P.5", str(q), str(r)])
        except BaseException as exc:  # noqa: BLE001  # the point is to count every crash
            broken.append(f"{which} {name}: raised {type(exc).__name__}")
            continue
        err = capsys.readouterr().err
        if code == 2:
            refused += 1
            if "Traceback" in err or not re.search(rf"{re.escape(str(path))}(:\d+)+: ", err):
                broken.append(f"{which} {name}: unlocated error {err[:120]!r}")
        elif code != 0:
            broken.append(f"{which} {name}: exit {code}")
    record_property("bad_input_cases", len(corpus))
    shown = "\n".join(broken[:20])
    assert not broken, f"{len(broken)} of {len(corpus)} cases mishandled:\n{shown}"
    assert len(corpus) >= 300  # the corpus is real ...
    assert refused >= 100  # ... and most of it is refused, not read as something else
