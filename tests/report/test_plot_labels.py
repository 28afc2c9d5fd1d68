"""Labels beside a plot: a sweep's jobs, labelled by their overrides, stay told apart.

Cut from the right at 42 characters, Galaxy's sweep over
``metrics.policies.missing_query=skip,zero 'dataset.normalise=[],[strip_version]'``
labelled four lines with two labels: the part that told them apart was cut off.
"""

from __future__ import annotations

from evalframe.report.plots import _short


def test_a_short_label_is_kept_whole() -> None:
    assert _short("retriever.k1=0.9") == "retriever.k1=0.9"


def test_long_overrides_lose_their_sections_before_any_character() -> None:
    jobs = [
        f"metrics.policies.missing_query={m} dataset.normalise={n}"
        for m in ("skip", "zero")
        for n in ("[]", "[strip_version]")
    ]
    shown = [_short(j) for j in jobs]
    assert shown == [
        "missing_query=skip normalise=[]",
        "missing_query=skip normalise=[strip_versi…",  # 44 characters: cut at 42
        "missing_query=zero normalise=[]",
        "missing_query=zero normalise=[strip_versi…",
    ]
    assert len(set(shown)) == len(jobs)  # four lines, four labels (they were two)


def test_what_still_does_not_fit_is_cut_and_marked() -> None:
    label = "+retriever.settings.a_very_long_parameter_name=" + "x" * 40
    shown = _short(label)
    assert shown.startswith("+a_very_long_parameter_name=") and shown.endswith("…")
    assert len(shown) == 42
