"""`evalframe runs`' result column: a failed gate and an error read differently."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from evalframe_mlflow.commands import _result


def run(status: str, **tags: str) -> SimpleNamespace:
    return SimpleNamespace(info=SimpleNamespace(status=status), data=SimpleNamespace(tags=tags))


@pytest.mark.parametrize(
    ("status", "tags", "shown"),
    [
        ("FINISHED", {"evalframe.gates_passed": "true"}, "passed"),
        ("FINISHED", {"evalframe.gates_passed": "false"}, "FAILED"),  # a gate failed: exit 1
        # no required gate: exit 0, but nothing was checked (it said "passed")
        (
            "FINISHED",
            {"evalframe.gates_passed": "true", "evalframe.verdict": "unchecked"},
            "unchecked",
        ),
        ("FINISHED", {"evalframe.gates_passed": "true", "evalframe.verdict": "passed"}, "passed"),
        ("FAILED", {}, "error"),  # an error stopped it (it was "failed", one case apart)
        ("RUNNING", {}, "running"),
        ("KILLED", {}, "killed"),
        ("FINISHED", {}, "—"),
        ("FINISHED", {"evalframe.sweep": "true"}, "sweep"),
        ("FAILED", {"evalframe.sweep": "true"}, "sweep failed"),
    ],
)
def test_each_way_a_run_ends_has_its_own_word(
    status: str, tags: dict[str, str], shown: str
) -> None:
    assert _result(run(status, **tags)) == shown


def job(**params: str) -> SimpleNamespace:
    return SimpleNamespace(data=SimpleNamespace(tags={}, params=params))


def test_the_params_shown_are_those_that_tell_the_runs_apart_first() -> None:
    """A k1 sweep beside a bm25-or-dense sweep: the four shown were the first four
    alphabetically (b, batch_size, device, doc_prefix), hiding k1 and the retriever."""
    from evalframe_mlflow.commands import _varying_params

    bm25 = [
        job(**{"retriever.name": "bm25", "retriever.k1": k1, "retriever.b": "0.75"})
        for k1 in ("0.9", "1.2")
    ]
    dense = job(
        **{
            "retriever.name": "dense",
            "retriever.batch_size": "32",
            "retriever.device": "cpu",
            "retriever.doc_prefix": "",
            "output.dir": "elsewhere",
        }
    )
    shown, differing = _varying_params([*bm25, dense])
    # the name; then k1, whose value differs where present; then what only some runs have
    assert shown == ["retriever.name", "retriever.k1", "retriever.b", "retriever.batch_size"]
    assert differing == 6  # output.* never counts
    everything, _ = _varying_params([*bm25, dense], None)
    assert everything[4:] == ["retriever.device", "retriever.doc_prefix"]


def test_a_tuning_sweeps_runs_follow_its_parent_trials_first_then_the_others() -> None:
    """``evalframe.sweep_job`` is ``heldout`` or ``untuned_*`` on the runs a tuning sweep
    makes after its trials: the listing sorted it as a number and stopped."""
    from evalframe_mlflow.commands import runs_table

    def logged(run_id: str, name: str, start: int, **tags: str) -> SimpleNamespace:
        info = SimpleNamespace(run_id=run_id, run_name=name, start_time=start, status="FINISHED")
        return SimpleNamespace(info=info, data=SimpleNamespace(tags=tags, params={}, metrics={}))

    parent = logged("p" * 32, "sweep t s", 0, **{"evalframe.sweep": "true"})

    def child(run_id: str, name: str, start: int, job: str) -> SimpleNamespace:
        tags = {"mlflow.parentRunId": "p" * 32, "evalframe.sweep_job": job}
        return logged(run_id, name, start, **tags)

    runs = [
        child("u" * 32, "untuned (held-out part): k1=1.2", 9, "untuned_heldout"),
        child("v" * 32, "untuned (tuning part): k1=1.2", 8, "untuned_tune"),
        child("h" * 32, "held-out: k1=2.4", 7, "heldout"),
        child("b" * 32, "k1=0.6", 2, "10"),
        child("a" * 32, "k1=2.4", 1, "2"),
        parent,
    ]
    _, rows = runs_table(runs, [], [])
    assert [r[1] for r in rows] == [
        "sweep t s",
        "k1=2.4",
        "k1=0.6",
        "held-out: k1=2.4",
        "untuned (tuning part): k1=1.2",
        "untuned (held-out part): k1=1.2",
    ]


def test_no_param_column_is_headed_as_another_column_is() -> None:
    """`retriever.name` was headed `name`, beside the run-name column `name`; a gate's
    `value` said nothing of which gate."""
    from evalframe_mlflow.commands import render_runs

    def logged(run_id: str, name: str, **params: str) -> SimpleNamespace:
        info = SimpleNamespace(run_id=run_id, run_name=name, start_time=0, status="FINISHED")
        tags = {"evalframe.experiment": "quickstart", "evalframe.gates_passed": "true"}
        return SimpleNamespace(
            info=info, data=SimpleNamespace(tags=tags, params=params, metrics={})
        )

    params = ["retriever.name", "retriever.k1", "gates.mrr.value"]
    runs = [
        logged("a" * 32, "k1=0.6", **dict(zip(params, ["bm25", "0.6", "0.5"], strict=True))),
        logged("b" * 32, "dense-run", **dict(zip(params, ["dense", "—", "0.9"], strict=True))),
    ]
    text = render_runs(runs, [], params, width=100)
    head = next(line for line in text.splitlines() if line.startswith("run "))
    assert head.split() == ["run", "name", "result", "retriever", "k1", "mrr.value", "started"]
    assert "dense-run" in text and "dense" in text.replace("dense-run", "")
    # a param whose short head is a column's, or a metric's, keeps its full key
    text = render_runs(runs[:1], ["RR"], ["x.RR", "y.result"], width=100)
    head = next(line for line in text.splitlines() if line.startswith("run "))
    assert head.split() == ["run", "name", "result", "RR", "x.RR", "y.result", "started"]


def test_a_prefix_two_runs_share_is_refused_naming_both() -> None:
    """Our own lookup (a real store gives two ids a shared beginning only by chance):
    one match is the run, two are named, none says so."""
    from evalframe_mlflow.commands import _run_id_from_prefix

    from evalframe.core.errors import ConfigError

    class Page(list):  # what MlflowClient.search_runs returns: a list with a token
        token = None

    ids = ["abcdef01" + "0" * 24, "abcdef02" + "0" * 24, "12345678" + "0" * 24]
    client = SimpleNamespace(
        search_experiments=lambda: [SimpleNamespace(experiment_id="0")],
        search_runs=lambda *a, **k: Page(
            SimpleNamespace(info=SimpleNamespace(run_id=i)) for i in ids
        ),
    )
    assert _run_id_from_prefix(client, "123456", "sqlite:///x.db") == ids[2]
    with pytest.raises(ConfigError) as two:
        _run_id_from_prefix(client, "abcdef", "sqlite:///x.db")
    assert "2 MLflow runs in sqlite:///x.db have ids beginning with abcdef" in two.value.message
    assert ids[0] in str(two.value.got) and ids[1] in str(two.value.got)
    # none: not said here, as a folder's hex name (`decade`) may be what was meant
    assert _run_id_from_prefix(client, "999999", "sqlite:///x.db") is None
