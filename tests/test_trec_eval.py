"""``evalframe trec-eval`` against NIST trec_eval's own expected outputs.

The files in tests/data/trec_eval are trec_eval's ``test/`` folder (see its
README). Each conformance case runs the command that produced an expected
file, in-process, and compares every line of a supported measure as printed.
"""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from evalframe.app import cli
from evalframe.trec_eval import drop_in as te

DATA = Path(__file__).parent / "data" / "trec_eval"

#: trec_eval measures with no evalframe equivalent: their lines are not compared.
SKIPPED_AS_UNSUPPORTED = frozenset(
    {
        "infAP", "Rprec_mult", "utility", "binG", "G", "ndcg_rel", "Rndcg", "relative_P",
        "set_relative_P", "set_map", "rbp", "rbp_resid",
    }
)  # fmt: skip

#: expected file -> the trec_eval arguments that produced it (shared/data/trec_eval/README.md).
#: out.test.meas_params also asked for Rprec_mult.5.0,0.2,0.35 and utility.2,-1,0,0,
#: which are unsupported; they are dropped from the command and their lines skipped.
COMMANDS = {
    "out.test": "qrels.test results.test",
    "out.test.a": "-m all_trec qrels.test results.test",
    "out.test.aq": "-m all_trec -q qrels.test results.test",
    "out.test.aqc": "-m all_trec -q -c qrels.test results.trunc",
    "out.test.aqcM": "-m all_trec -q -c -M100 qrels.test results.trunc",
    "out.test.aql": "-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test",
    "out.test.meas_params": (
        "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 "
        "-m 11pt_avg..25,.5,.75 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 "
        "-msuccess.2,5,20 qrels.test results.test"
    ),
}
# Not run: out.comment.test (its 2.8 MB run is not copied here; it matches, checked by hand),
# out.test.aqZ (-Z z-scores), out.test.prefs / qrels_prefs / qrels_jg (-R formats).

_ROOTS = sorted(te.MEASURE_ORDER, key=len, reverse=True)


def measure_root(printed_name: str) -> str:
    """``map_cut_10`` -> ``map_cut``: the longest trec_eval measure name that prefixes it."""
    for root in _ROOTS:
        if printed_name == root or printed_name.startswith(root + "_"):
            return root
    raise KeyError(printed_name)


def run(args: list[str]) -> str:
    buf = io.StringIO()
    assert te.main(args, out=buf) == 0
    return buf.getvalue()


def command(name: str, compat: str) -> list[str]:
    parts = shlex.split(COMMANDS[name])
    files = [str(DATA / p) for p in parts[-2:]]
    extra = ["--compat", compat] if compat != "10.0" else []
    return [*extra, *parts[:-2], *files]


CASES = [(name, "10.0", DATA / name) for name in COMMANDS] + [
    (name, "9.0.8", DATA / "v9.0.8_expected" / name) for name in COMMANDS
]


@pytest.mark.parametrize(("name", "compat", "expected_path"), CASES, ids=lambda v: str(v))
def test_output_matches_trec_eval_line_for_line(
    name: str, compat: str, expected_path: Path
) -> None:
    expected = expected_path.read_text().splitlines()
    assert {measure_root(line.split("\t")[0].strip()) for line in expected} <= set(te.MEASURE_ORDER)
    wanted = [
        line
        for line in expected
        if measure_root(line.split("\t")[0].strip()) not in SKIPPED_AS_UNSUPPORTED
    ]
    got = run(command(name, compat)).splitlines()
    assert got == wanted  # same lines, same order, byte for byte
    # most of each file is compared, not just a handful of lines
    assert len(wanted) >= 0.65 * len(expected), (len(wanted), len(expected))


def test_the_compared_measures_cover_all_of_all_trec_but_the_unsupported() -> None:
    printed = {
        measure_root(line.split("\t")[0].strip())
        for line in (DATA / "out.test.aql").read_text().splitlines()
    }
    compared = printed - SKIPPED_AS_UNSUPPORTED
    assert compared == set(te.SUPPORTED)  # every supported measure is checked somewhere
    assert len(compared) >= 24
    assert set(te.UNSUPPORTED) & printed == SKIPPED_AS_UNSUPPORTED


def test_the_default_is_the_official_set_and_matches_out_test_exactly() -> None:
    got = run([str(DATA / "qrels.test"), str(DATA / "results.test")])
    assert got == (DATA / "out.test").read_text()


def test_v10_and_v9_differ_only_where_the_rounding_of_recall_levels_does() -> None:
    args = ["-q", "-m", "iprec_at_recall", str(DATA / "qrels.test"), str(DATA / "results.test")]
    v10, v9 = run(args).splitlines(), run(["--compat", "9.0.8", *args]).splitlines()
    assert "iprec_at_recall_0.10  \t301\t0.2098" in v10
    assert "iprec_at_recall_0.10  \t301\t0.2096" in v9


def test_cli_dispatches_trec_eval(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["trec-eval", "-m", "map", str(DATA / "qrels.test"), str(DATA / "results.test")]
    )
    assert code == 0
    assert capsys.readouterr().out == "map                   \tall\t0.1785\n"


def test_json_round_trips_to_the_printed_lines(capsys: pytest.CaptureFixture[str]) -> None:
    args = command("out.test.aqc", "10.0")
    text = run(args).splitlines()
    payload = json.loads(run(["--json", *args]))
    assert payload["runid"] == "STANDARD"
    assert payload["num_q"] == 3
    assert payload["measures"]["P_5"] == ["P@5"]
    assert payload["measures"]["ndcg_cut_10"] == ["nDCG@10"]
    assert isinstance(payload["all"]["num_ret"], int)
    assert isinstance(payload["all"]["map"], float)
    rebuilt = []
    for qid, row in payload["per_query"].items():
        rebuilt += [te._format(k, qid, v, _kind(v)) for k, v in row.items()]
    rebuilt += [te._format(k, "all", v, _kind(v)) for k, v in payload["all"].items()]
    assert rebuilt == text


def _kind(value: object) -> str:
    return {int: "int", float: "float", str: "str"}[type(value)]


@pytest.mark.parametrize(
    ("flag", "root", "expected"),
    [
        ("P.5", "P", ["P@5"]),
        ("recall.100", "recall", ["R@100"]),
        ("success.1", "success", ["Hit@1"]),
        ("map_cut.5", "map_cut", ["AP@5"]),
        ("ndcg_cut.10", "ndcg_cut", ["nDCG@10"]),
        ("iprec_at_recall..5", "iprec_at_recall", ["IPrec@0.5"]),
        ("recip_rank", "recip_rank", ["RR"]),
        ("ndcg.1=3,2=9,4=4.5", "ndcg", ["nDCG(gain=1:3;2:9;4:4.5)"]),
        ("11pt_avg", "11pt_avg", ["11pt"]),
        ("set_F", "set_F", ["SetF"]),
    ],
)
def test_measures_map_to_canonical_evalframe_metrics(
    flag: str, root: str, expected: list[str]
) -> None:
    plan = te._plan(te.parse_measures([flag]), rel=1, compat="10.0")
    assert [str(m) for o in plan for m in o.metrics] == expected


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ("ndcg.2=1e400", "gain '2=1e400' is not supported"),  # inf: crashed an assertion
        ("ndcg.1=nan", "gain '1=nan' is not a number"),  # C's atof reads NaN, no word said
        ("ndcg.2=inf", "gain '2=inf' is not a number"),
        ("ndcg.1=3x", "gain '1=3x' is not a number"),
        ("ndcg.1=2,1=3", "label 1 is given two gains"),  # one was dropped without a word
        ("ndcg.01=2,1=3", "label 1 is given two gains"),
        # trec_eval skips a pair whose label is not an integer; so did evalframe, exit 0
        ("ndcg.x=1", "label 'x' of 'x=1' is not an integer"),
        ("ndcg.1.5=2", "label '1.5' of '1.5=2' is not an integer"),
        ("ndcg.1=2,x=3", "label 'x' of 'x=3' is not an integer"),
        ("ndcg.=2", "label '' of '=2' is not an integer"),
        ("ndcg.99999999999999999999=1", "label 99999999999999999999 is outside a C int"),
        ("ndcg.1=-3", "gain '1=-3' is not supported"),
        ("ndcg.0=3", "gain '0=3' is not supported"),
        ("ndcg.1=2,", "malformed pair parameters"),
    ],
)
def test_a_gain_map_no_number_can_be_made_of_is_refused(
    flag: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalframe.app.cli import main

    code = main(["trec-eval", "-m", flag, str(DATA / "qrels.test"), str(DATA / "results.test")])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: option -m: measure {flag}: {said}")
    assert "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize(
    "flag",
    [
        "set_F.1e400",  # inf: crashed an assertion (exit 3)
        "set_F.nan",  # scored as if a weight, exit 0
        "iprec_at_recall.nan,0.5",  # a level printed as "0.00"
        "11pt_avg.nan",
        "iprec_at_recall.x",
    ],
)
def test_a_real_parameter_that_is_no_finite_number_is_refused(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalframe.app.cli import main

    code = main(["trec-eval", "-m", flag, str(DATA / "qrels.test"), str(DATA / "results.test")])
    assert code == 2
    captured = capsys.readouterr()
    bad = flag.split(".", 1)[1].split(",")[0]
    assert captured.err.startswith(
        f"error: option -m: measure {flag}: {bad!r} is not a finite number"
    )
    assert "Traceback" not in captured.err and captured.out == ""


def test_gains_whose_ideal_dcg_overflows_are_refused_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each gain finite, their sum not: query 1's DCG and ideal DCG were inf, nDCG NaN, and
    an assertion crashed (exit 3); an ideal DCG alone overflowing would have made it 0."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("1 0 d1 1\n1 0 d2 2\n")
    run.write_text("1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.5 t\n")
    err = error_of(capsys, "-m", "ndcg.1=1e308,2=1.7e308", str(qrels), str(run))
    assert err.startswith(
        "error: option -m: measure ndcg.1=1e308,2=1.7e308: the gain 1.7e+308 of label 2 is "
        "too large: the ideal DCG of query 1 (2 relevant documents) would overflow a double"
    )
    # 1e308 * (1 + 1/log2(3)) = 1.63e308 still fits: DCG = ideal DCG, nDCG 1
    # 1e200 for label 2: (1 + 1e200/log2(3)) / (1e200 + 1/log2(3)) = 1/log2(3) = 0.6309
    for flag, value in (("ndcg.1=1e308,2=1e308", "1.0000"), ("ndcg.2=1e200", "0.6309")):
        assert cli.main(["trec-eval", "-m", flag, str(qrels), str(run)]) == 0
        assert capsys.readouterr().out == f"{'ndcg_' + flag[5:]:<22}\tall\t{value}\n"


def test_level_for_rel_reaches_binary_measures_but_not_ndcg() -> None:
    plan = te._plan(te.parse_measures(["P.5", "ndcg_cut.5", "map"]), rel=2, compat="9.0.8")
    assert [str(m) for o in plan for m in o.metrics] == ["AP(rel=2)", "P(rel=2)@5", "nDCG@5"]
    plan = te._plan(te.parse_measures(["iprec_at_recall..5"]), rel=1, compat="9.0.8")
    assert [str(m) for o in plan for m in o.metrics] == ["IPrec(rounding=v9)@0.5"]


def test_output_follows_trec_eval_measure_order_and_sorts_cutoffs() -> None:
    args = ["-m", "ndcg_cut.10,5", "-m", "P.20,1", "-m", "map"]
    got = run([*args, str(DATA / "qrels.test"), str(DATA / "results.test")])
    assert [line.split("\t")[0].strip() for line in got.splitlines()] == [
        "map", "P_1", "P_20", "ndcg_cut_5", "ndcg_cut_10",
    ]  # fmt: skip


def test_gm_map_is_the_geometric_mean_of_ap() -> None:
    args = ["-q", "--json", "-m", "map", "-m", "gm_map"]
    payload = json.loads(run([*args, str(DATA / "qrels.test"), str(DATA / "results.test")]))
    aps = [row["map"] for row in payload["per_query"].values()]
    import math

    expected = math.exp(sum(math.log(max(a, 1e-5)) for a in aps) / len(aps))
    assert payload["all"]["gm_map"] == pytest.approx(expected, rel=1e-12)


def test_nosummary_prints_only_per_query_lines() -> None:
    got = run(["-q", "-n", "-m", "map", str(DATA / "qrels.test"), str(DATA / "results.test")])
    assert [line.split("\t")[1] for line in got.splitlines()] == ["301", "302", "303"]


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_queries_missing_from_the_run_are_skipped_without_c_and_scored_0_with_it(
    tmp_path: Path,
) -> None:
    qrels = write(tmp_path / "q", "1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    runf = write(tmp_path / "r", "1 Q0 a 1 0.5 tag\n1 Q0 b 2 0.4 tag\n9 Q0 x 1 1 other\n")
    assert run(["-q", "-m", "num_q", "-m", "map", qrels, runf]).splitlines() == [
        "map                   \t1\t1.0000",
        "num_q                 \tall\t1",
        "map                   \tall\t1.0000",
    ]
    assert run(["-q", "-c", "-m", "num_q", "-m", "map", qrels, runf]).splitlines() == [
        "map                   \t1\t1.0000",
        "map                   \t2\t0.0000",
        "num_q                 \tall\t2",
        "map                   \tall\t0.5000",
    ]


def test_judged_only_and_max_per_topic(tmp_path: Path) -> None:
    qrels = write(tmp_path / "q", "1 0 a 1\n1 0 b 0\n1 0 c 1\n")
    # trec order: u (0.9, unjudged), b (0.8), a (0.7), c (0.6)
    runf = write(tmp_path / "r", "1 Q0 a 1 0.7 t\n1 Q0 u 2 0.9 t\n1 Q0 b 3 0.8 t\n1 Q0 c 4 0.6 t\n")
    base = ["-m", "P.1,3", "-m", "num_ret", "-m", "relstring"]
    assert run([*base, qrels, runf]).splitlines()[1:] == [
        "P_1                   \tall\t0.0000",
        "P_3                   \tall\t0.3333",
    ]
    assert run(["-J", *base, qrels, runf]).splitlines()[1:] == [
        "P_1                   \tall\t0.0000",
        "P_3                   \tall\t0.6667",
    ]
    assert run(["-q", "-M2", *base, qrels, runf]).splitlines()[:2] == [
        "num_ret               \t1\t2",
        "P_1                   \t1\t0.0000",
    ]
    assert "relstring             \t1\t'-01'" in run(["-q", "-M3", *base, qrels, runf])


def test_comment_blank_lines_and_trailing_words_are_accepted(tmp_path: Path) -> None:
    qrels = (DATA / "qrels.test").read_text().splitlines()
    qrels.insert(0, "# comment here")
    qrels.insert(5, "# and comment here")
    results = (DATA / "results.test").read_text().splitlines()
    results.insert(3, "")
    results.insert(7, "# a comment line")
    results[9] += " trailing words are ignored"
    q = write(tmp_path / "q", "\n".join(qrels) + "\n")
    r = write(tmp_path / "r", "\r\n".join(results))  # CRLF, no final newline
    assert run([q, r]) == (DATA / "out.test").read_text()


def error_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(["trec-eval", *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_malformed_qrels_line_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", "# header\n1 0 a 1\n\n1 0 b\n")
    r = write(tmp_path / "r", "1 Q0 a 1 0.5 t\n")
    err = error_of(capsys, q, r)
    assert f"{q}:4: a qrels line has 3 columns" in err
    q2 = write(tmp_path / "q2", "1 0 a 1\n1 0 b high\n")
    assert f"{q2}:2: the relevance column is not a number" in error_of(capsys, q2, r)


def test_malformed_run_line_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", "1 0 a 1\n")
    r = write(tmp_path / "r", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4\n")
    assert f"{r}:2: a run line has 5 columns" in error_of(capsys, q, r)
    r2 = write(tmp_path / "r2", "1 Q0 a 1 0.5 t\n1 Q0 b 2 high t\n")
    assert f"{r2}:2: the score column is not a number" in error_of(capsys, q, r2)


def test_duplicate_docs_stop_like_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", "1 0 a 1\n1 0 b 0\n")
    r = write(tmp_path / "r", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t\n1 Q0 a 3 0.3 t\n")
    assert f"{r}:3: query '1' lists doc 'a' twice (first at line 1)" in error_of(capsys, q, r)
    # ... unless -M cuts the repeat off first, as in trec_eval
    assert cli.main(["trec-eval", "-M2", q, r]) == 0
    capsys.readouterr()
    q2 = write(tmp_path / "q2", "1 0 a 1\n1 0 a 0\n")
    assert f"{q2}:2: query '1' lists doc 'a' twice" in error_of(capsys, q2, r)


def test_unknown_and_unsupported_measures_exit_2_listing_the_supported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = [str(DATA / "qrels.test"), str(DATA / "results.test")]
    err = error_of(capsys, "-m", "infAP", *files)
    assert "unsupported trec_eval measure 'infAP'" in err
    assert "ndcg_cut" in err and "recip_rank" in err
    assert "unknown trec_eval measure 'mapp'" in error_of(capsys, "-m", "mapp", *files)
    # trec_eval's options it does not implement are named, not "unrecognized arguments:
    # -Z results.test" (the file after them read as the stray argument)
    err = error_of(capsys, "-Z", "z", *files)
    assert err.startswith("error: option -Z: trec_eval's -Z (z-scores against a file")
    assert "docs/trec-eval.md" in err
    assert "option -D: trec_eval's -D" in error_of(capsys, "-D2", *files)
    assert "cutoffs must be positive" in error_of(capsys, "-m", "P.0", *files)


def test_a_cutoff_that_is_not_positive_is_said_with_an_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = [str(DATA / "qrels.test"), str(DATA / "results.test")]
    assert error_of(capsys, "-m", "P.0", *files) == (
        "error: option -m: measure P.0: cutoffs must be positive (expected whole numbers of "
        "documents from 1 up, comma-separated; got '0')\n"
        "  hint: for example -m P.5,10 (P at 5 and at 10 documents)\n"
    )
    err = error_of(capsys, "-m", "ndcg_cut.10,x", *files)  # a word is C's atol 0
    assert "measure ndcg_cut.10,x: cutoffs must be positive" in err and "got 'x')" in err
    assert "hint: for example -m ndcg_cut.5,10" in err
    assert "hint: give each cutoff once, for example -m P.5,10" in error_of(
        capsys, "-m", "P.5,5", *files
    )


def test_no_common_query_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q = write(tmp_path / "q", "1 0 a 1\n")
    r = write(tmp_path / "r", "2 Q0 a 1 0.5 t\n")
    err = error_of(capsys, q, r)
    assert err.startswith(
        f"error: {r}: no queries with both results and relevance info: none of the run's "
        f"query ids is in the qrels file (got ids '2' in {r}; ids '1' in {q})"
    ), err
    assert "hint: check that the run and the qrels are of the same topics" in err


def test_the_two_files_swapped_are_told_qrels_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", "1 0 a 1\n")
    r = write(tmp_path / "r", "1 Q0 a 1 0.5 t\n")
    err = error_of(capsys, r, q)  # the run where the qrels belong
    assert err.startswith(f"error: {r}:1: a qrels line has 6 columns"), err
    assert "is a run file given where the qrels belong? (trec-eval takes QRELS first" in err


def test_an_empty_qrels_or_run_file_is_named_as_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both said "RUN: no queries with both results and relevance info", hinting that the
    run's ids did not match: an empty qrels file was blamed on the run."""
    q = write(tmp_path / "q", "1 0 a 1\n")
    r = write(tmp_path / "r", "1 Q0 a 1 0.5 t\n")
    empty_q, empty_r = write(tmp_path / "eq", ""), write(tmp_path / "er", "\n")
    err = error_of(capsys, empty_q, r)
    assert err.startswith(
        f"error: {empty_q}: the qrels file is empty: it holds no judgments, so no query of "
        "the run can be scored (expected one judgment a line, 'qid iter docno rel'"
    ), err
    assert "hint: check that this is the qrels file of the run's topics" in err
    assert "query ids" not in err
    err = error_of(capsys, q, empty_r)
    assert err.startswith(
        f"error: {empty_r}: the run file is empty: it holds no results, so there is no "
        "query to score (expected one result a line, 'qid Q0 docno rank score tag'"
    ), err
    assert "query ids" not in err
    assert error_of(capsys, empty_q, empty_r).startswith(f"error: {empty_q}: the qrels file is")
    # -c scores every qrels query, an empty run's as 0, as trec_eval does
    assert cli.main(["trec-eval", "-c", "-m", "P.5", q, empty_r]) == 0
    assert capsys.readouterr().out.endswith("P_5                   \tall\t0.0000\n")


def test_scores_tie_in_double_for_v10_and_in_float32_for_v9(tmp_path: Path) -> None:
    # 0.10000000001 > 0.1 as doubles (trec_eval 10.0), equal as floats (9.0.8): then the
    # doc id decides, descending, and b comes first.
    q = write(tmp_path / "q", "1 0 a 1\n1 0 b 0\n")
    r = write(tmp_path / "r", "1 Q0 a 1 0.10000000001 t\n1 Q0 b 2 0.1 t\n")
    assert run(["-m", "recip_rank", q, r]) == "recip_rank            \tall\t1.0000\n"
    assert run(["--compat", "9.0.8", "-m", "recip_rank", q, r]).endswith("\t0.5000\n")


def test_bpref_sums_in_rank_order_like_trec_eval(tmp_path: Path) -> None:
    labels = [1, 3, 12, 2, 12, 1, 12, 0, 0, 0, 2, 0, 3, 12, 3, 0, 0, 0, 1, 0, 12, 1, 0, 2, 0]
    qrels = [f"1 0 d{i:02d} {label}" for i, label in enumerate(labels)]
    qrels += ["1 0 x0 1"]  # 16 relevant, 10 judged non-relevant in all
    runf = [f"1 Q0 d{i:02d} {i + 1} {100 - i} t" for i in range(len(labels))]
    q = write(tmp_path / "q", "\n".join(qrels) + "\n")
    r = write(tmp_path / "r", "\n".join(runf) + "\n")
    assert run(["-m", "bpref", q, r]) == "bpref                 \tall\t0.6437\n"


@pytest.mark.parametrize(("name", "compat", "expected_path"), CASES)
def test_single_space_files_take_the_fast_reader_and_print_the_same(
    name: str, compat: str, expected_path: Path, tmp_path: Path
) -> None:
    """The shipped files use tabs (the careful reader); single-space copies take the
    columnar fast path. Both must print exactly the same lines."""
    args = command(name, compat)
    spaced = []
    for arg in args:
        path = Path(arg)
        if path.is_file():
            text = path.read_text()
            lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
            copy = tmp_path / path.name
            copy.write_text("\n".join(lines) + "\n")
            spaced.append(str(copy))
        else:
            spaced.append(arg)
    assert run(spaced) == run(args)
