"""What a service or a function returned, as a Ranking (retrieval.answers.build_ranking)."""

from __future__ import annotations

import pytest

from evalframe.core.errors import PluginError
from evalframe.retrieval.answers import build_ranking


def test_an_id_with_a_space_is_a_plugin_error_naming_the_query_and_the_result() -> None:
    """It crashed with pydantic's ValidationError (exit 3) when an HTTP service or a
    Python function answered "d 1": a TREC run cannot hold it, and the user can fix it."""
    with pytest.raises(PluginError) as err:
        build_ranking("q1", [("d0", 3.0), ("d 1", 2.0)], 5, source="http retriever")
    assert err.value.message.startswith(
        "http retriever returned a document id evalframe cannot keep for query 'q1' (result 2)"
    )
    assert "contains whitespace" in err.value.message


def test_ids_are_kept_as_the_identifier_policy_reads_them() -> None:
    ranking = build_ranking("q1", [(" d1 ", 2.0), (7, 1.0)], 5, source="x")
    assert ranking.doc_ids == ("d1", "7")  # surrounding space dropped, integers as text


def test_an_id_holding_half_a_surrogate_pair_is_a_plugin_error() -> None:
    """A JSON answer's ``"doc\\ud800x"`` (an emoji cut in two) crashed with pydantic's
    ValidationError (exit 3): no character, so no run.trec could be written with it."""
    with pytest.raises(PluginError) as err:
        build_ranking("q1", [("d0", 3.0), ("doc\ud800x", 2.0)], 5, source="http retriever")
    assert "cannot keep for query 'q1' (result 2)" in err.value.message
    assert "half of a UTF-16 surrogate pair" in err.value.message
    assert "spaces" not in (err.value.hint or "")  # the whitespace case's advice does not fit
    err.value.render().encode("utf-8")  # the message itself can be printed
