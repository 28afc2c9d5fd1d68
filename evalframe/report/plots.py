"""The report's plots, drawn by matplotlib as inline SVG.

matplotlib comes with mlflow, so it costs no new dependency, but importing it
takes a few hundred milliseconds: it is imported here, inside the drawing
functions, only when a page is written. Figures are made with
``matplotlib.figure.Figure`` rather than pyplot, so no global state or GUI
backend is involved.

Colour-vision safety: colours are the Okabe-Ito palette, and nothing is told
apart by colour alone: each series also has its own marker, line style or
hatch, and verdicts carry a shape (▲ improved, ▼ regressed, ● within noise).
Text stays text (``svg.fonttype: none``), so the page needs no font file and
its labels can be searched and copied.

Each drawing function is wrapped by :func:`evalframe.report.plotcache.kept`:
within ``plotcache.kept_in(cache_dir)``, a plot drawn once for the same data is
found again instead of drawn.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalframe.report.plotcache import kept
from evalframe.report.plotdata import (
    Bar,
    Curves,
    LatencyData,
    Reliability,
    ScoreHistogram,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from evalframe.report.drift import DeltaRow

__all__ = [
    "PALETTE",
    "VERDICT_MARKS",
    "curves_svg",
    "deltas_svg",
    "grouped_bars_svg",
    "latency_runs_svg",
    "latency_svg",
    "reliability_svg",
    "scores_svg",
]

#: Okabe & Ito's palette, distinguishable with every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
LINES = ("-", "--", "-.", ":")
HATCHES = ("", "///", "\\\\\\", "xxx", "---", "|||", "+++")
#: verdict -> (marker, colour, the character the tables print)
VERDICT_MARKS = {
    "improved": ("^", "#0072B2", "▲"),
    "regressed": ("v", "#D55E00", "▼"),
    "within noise": ("o", "#666666", "●"),
}

#: A curve family's panel title: the metric's canonical name, its identity everywhere
#: (a harness's label such as ADK's "Recall@5" may name another metric).
CURVE_TITLES = {"Recall": "R", "Precision": "P", "nDCG": "nDCG"}

#: typed Any: matplotlib's stubs accept only a literal of known keys
_RC: Any = {
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
}


def _style(i: int) -> dict[str, Any]:
    return {
        "color": PALETTE[i % len(PALETTE)],
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINES[i % len(LINES)],
    }


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _margins(
    fig: Figure,
    left: float = 0.55,
    bottom: float = 0.45,
    top: float = 0.3,
    right: float = 0.15,
    **space: float,
) -> None:
    """Margins in inches. Fixed margins rather than a constrained layout: the layout
    engine draws every figure twice to measure it, which doubles the page's cost."""
    width, height = fig.get_size_inches()
    left = min(left, 0.45 * width)  # very long labels are cut (see _short), never the axes
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        **space,
    )


def _label_inches(labels: Sequence[str]) -> float:
    """Room for the longest tick label at 9 pt (about 0.075 in a character)."""
    return 0.25 + 0.075 * max((len(_short(x)) for x in labels), default=4)


def _legend_layout(labels: Sequence[str]) -> tuple[int, float]:
    """Columns of a legend below the axes (one when the labels are long) and its height."""
    cols = 3 if max((len(x) for x in labels), default=0) <= 22 else 1
    return cols, 0.12 + 0.2 * -(-len(labels) // cols)


def _legend(fig: Figure, handles: Any, labels: Sequence[str]) -> float:
    """A legend below the axes; the inches it needs."""
    cols, inches = _legend_layout(labels)
    fig.legend(handles, labels, loc="lower center", ncols=cols)
    return inches


def _short(label: str, limit: int = 42) -> str:
    """A label that fits beside a plot (a run labelled by long overrides); the page's
    tables carry the whole label. Overrides lose their keys' sections first
    (``metrics.policies.missing_query=skip`` -> ``missing_query=skip``): cut from
    the right, two jobs that differ in their second override read the same."""
    if len(label) <= limit:
        return label
    label = " ".join(_setting(word) for word in label.split(" "))
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _setting(override: str) -> str:
    """``a.b.key=value`` as ``key=value`` (with its ``+``/``~``); anything else as it is."""
    key, sep, value = override.partition("=")
    if not sep or "." not in key:
        return override
    mark = key[: len(key) - len(key.lstrip("+~"))]
    return f"{mark}{key.rsplit('.', 1)[1]}={value}"


def _svg(fig: Figure, name: str, label: str) -> str:
    """The figure as an ``<svg>`` element for inlining: no XML prolog, no date, ids
    salted by ``name`` so that several plots on one page never share an id."""
    import matplotlib

    buf = io.StringIO()
    rc: Any = {**_RC, "svg.hashsalt": f"evalframe-{name}"}
    with matplotlib.rc_context(rc):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # matplotlib's RDF block only names the format; it costs bytes and looks like links
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    label = label.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return re.sub(r"^<svg ", f'<svg role="img" aria-label="{label}" ', text, count=1)


def _rc() -> Any:
    import matplotlib

    return matplotlib.rc_context(_RC)


@kept
def curves_svg(
    series: Mapping[str, Curves], name: str = "curves", titles: Mapping[str, str] | None = None
) -> str:
    """Each curve family (recall, precision, nDCG; or the run's own, see
    ``plotdata.curve_families``) against k: one panel each, one line per run.

    The legend sits below the panels, never on the lines.
    """
    with _rc():
        fig = _figure(7.2, 2.7)
        families = list(next(iter(series.values())).values) if series else []
        axes = fig.subplots(1, max(len(families), 1), sharex=True, squeeze=False)[0]
        for ax, family in zip(axes, families, strict=False):
            for i, (label, curves) in enumerate(series.items()):
                values = [math.nan if v is None else v for v in curves.values[family]]
                ax.plot(
                    curves.ks,
                    values,
                    label=_short(label),
                    markersize=3.5,
                    linewidth=1.4,
                    **_style(i),
                )
            ax.set_title(_curve_title(family, titles))
            ax.set_xlabel("k")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlim(left=0.5)
        legend = 0.0
        if len(series) > 1:
            legend = _legend(fig, *axes[0].get_legend_handles_labels())
            fig.set_figheight(2.7 + legend)
        _margins(fig, left=0.45, bottom=0.45 + legend, wspace=0.25)
        drawn = ", ".join(_curve_title(f, titles) for f in families)
        return _svg(fig, name, f"metric at k: {drawn} against k")


def _curve_title(family: str, titles: Mapping[str, str] | None) -> str:
    """A panel's title: the caller's (a harness's label beside the canonical name),
    else the canonical ``R@k``."""
    if titles and family in titles:
        return titles[family]
    return f"{CURVE_TITLES.get(family, family)}@k"


@kept
def grouped_bars_svg(
    series: Mapping[str, Mapping[str, Sequence[Bar]]], title: str, name: str = "slices"
) -> str:
    """One panel per slice field; per slice value one horizontal bar per series (a
    metric of one run, or one run of several), with its CI as a whisker and its
    query count beside the label. Series differ by colour *and* hatch."""
    fields: list[str] = []
    for bars in series.values():
        fields += [f for f in bars if f not in fields]
    with _rc():
        rows = sum(len({b.label for s in series.values() for b in s.get(f, ())}) for f in fields)
        legend = _legend_layout([_short(s) for s in series])[1] if len(series) > 1 else 0.0
        height = 0.9 + 0.15 * rows * max(len(series), 1) + 0.45 * len(fields) + legend
        fig = _figure(7.2, min(height, 14.0))
        counts_per_field = [
            max(len({b.label for s in series.values() for b in s.get(f, ())}), 1) for f in fields
        ]
        axes = fig.subplots(
            len(fields), 1, squeeze=False, gridspec_kw={"height_ratios": counts_per_field}
        )[:, 0]
        longest = [
            f"{b.label} (n={b.n})" for s in series.values() for bars in s.values() for b in bars
        ]
        _margins(
            fig,
            left=_label_inches(longest),
            bottom=0.55 + legend,
            top=0.3,
            hspace=0.7 * len(fields) / max(height - 1.0, 1.0),
        )
        width = 0.8 / max(len(series), 1)
        for ax, field in zip(axes, fields, strict=True):
            labels: list[str] = []
            counts: dict[str, int] = {}
            for bars in series.values():
                for b in bars.get(field, ()):
                    if b.label not in labels:
                        labels.append(b.label)
                        counts[b.label] = b.n
            for i, (sname, bars) in enumerate(series.items()):
                by_label = {b.label: b for b in bars.get(field, ())}
                ys: list[float] = []
                means: list[float] = []
                errs: list[list[float]] = [[], []]
                for j, lab in enumerate(labels):
                    bar = by_label.get(lab)
                    if bar is None or math.isnan(bar.mean):
                        continue
                    ys.append(j - 0.4 + width * (i + 0.5))
                    means.append(bar.mean)
                    low = bar.low if not math.isnan(bar.low) else bar.mean
                    high = bar.high if not math.isnan(bar.high) else bar.mean
                    errs[0].append(max(bar.mean - low, 0.0))
                    errs[1].append(max(high - bar.mean, 0.0))
                ax.barh(
                    ys,
                    means,
                    height=width * 0.9,
                    xerr=errs,
                    color=PALETTE[i % len(PALETTE)],
                    hatch=HATCHES[i % len(HATCHES)],
                    edgecolor="white" if i else PALETTE[0],
                    alpha=0.9,
                    error_kw={"ecolor": "#222222", "capsize": 2.5, "linewidth": 0.9},
                    label=_short(sname),
                )
            ax.set_yticks(
                range(len(labels)), [_short(f"{lab} (n={counts[lab]})") for lab in labels]
            )
            ax.invert_yaxis()
            ax.set_xlim(0, 1.02)
            ax.set_title(f"by {field}", loc="left")
            ax.grid(axis="y", visible=False)
        axes[-1].set_xlabel(title)
        if len(series) > 1:
            _legend(fig, *axes[0].get_legend_handles_labels())
        return _svg(fig, name, f"per-slice bars: {title}, with confidence intervals")


@kept
def scores_svg(hist: ScoreHistogram, name: str = "scores") -> str:
    """Scores of relevant and of other retrieved documents (solid vs dashed, hatched)."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    with _rc():
        fig = _figure(4.6, 2.6)
        ax = fig.subplots()
        _margins(fig, left=0.6)
        edges = np.asarray(hist.edges)
        for i, (label, counts, hatch, line) in enumerate(
            (
                (f"relevant ({sum(hist.relevant)})", hist.relevant, "///", "-"),
                (f"not relevant ({sum(hist.other)})", hist.other, "", "--"),
            )
        ):
            ax.stairs(
                counts,
                edges,
                label=label,
                color=PALETTE[i],
                linestyle=line,
                linewidth=1.5,
                hatch=hatch,
                fill=False,
            )
        ax.set_xlabel("retrieval score")
        ax.set_ylabel("documents")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper right")
        return _svg(fig, name, "distribution of retrieval scores, relevant against not relevant")


@kept
def latency_svg(lat: LatencyData, name: str = "latency") -> str:
    """Per-query latency histogram with p50 (dashed) and p95 (dotted) marked and labelled."""
    from matplotlib.ticker import MaxNLocator

    with _rc():
        fig = _figure(4.6, 2.6)
        ax = fig.subplots()
        _margins(fig, left=0.6)
        ax.hist(lat.values, bins=min(30, max(5, len(lat.values) // 3)), color=PALETTE[4])
        low, high = ax.get_xlim()
        for value, label, style in ((lat.p50, "p50", "--"), (lat.p95, "p95", ":")):
            ax.axvline(value, color="#000000", linestyle=style, linewidth=1.4)
            right = value > low + 0.7 * (high - low)  # near the right edge: label to the left
            ax.annotate(
                f"{label} {value:.1f} ms",
                (value, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(-3 if right else 3, -10 if label == "p50" else -22),
                textcoords="offset points",
                ha="right" if right else "left",
                fontsize=8,
                backgroundcolor="#ffffffcc",
            )
        ax.set_xlabel("latency per query (ms)")
        ax.set_ylabel("queries")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        return _svg(fig, name, f"latency: p50 {lat.p50:.1f} ms, p95 {lat.p95:.1f} ms")


@kept
def latency_runs_svg(runs: Mapping[str, LatencyData], name: str = "latency") -> str:
    """p50 and p95 latency per run (several runs): two hatched bars each."""
    with _rc():
        labels = list(runs)
        fig = _figure(7.2, 1.2 + 0.38 * len(labels))
        ax = fig.subplots()
        _margins(fig, left=_label_inches(labels), bottom=0.75, top=0.1)
        for i, (stat, hatch) in enumerate((("p50", ""), ("p95", "///"))):
            ax.barh(
                [j - 0.2 + 0.4 * i for j in range(len(labels))],
                [getattr(runs[lab], stat) for lab in labels],
                height=0.38,
                color=PALETTE[i],
                hatch=hatch,
                edgecolor="white",
                label=stat,
            )
        ax.set_yticks(range(len(labels)), [_short(lab) for lab in labels])
        ax.invert_yaxis()
        ax.set_xlabel("latency (ms)")
        ax.grid(axis="y", visible=False)
        fig.legend(loc="lower center", ncols=2)
        return _svg(fig, name, "p50 and p95 latency per run")


@kept
def reliability_svg(rel: Reliability, name: str = "reliability") -> str:
    """Share of ✓ answers against stated confidence per bin, with the diagonal of
    perfect calibration; marker area grows with the bin's query count."""
    with _rc():
        fig = _figure(3.6, 3.2)
        ax = fig.subplots()
        _margins(fig, left=0.6, top=0.35)
        ax.plot([0, 1], [0, 1], linestyle=":", color="#666666", label="perfect calibration")
        sizes = [12 + 60 * b.n / max(x.n for x in rel.bins) for b in rel.bins]
        ax.scatter(
            [b.confidence for b in rel.bins],
            [b.accuracy for b in rel.bins],
            s=sizes,
            color=PALETTE[0],
            marker="s",
            label="bins (area: queries)",
            zorder=3,
        )
        ax.plot(
            [b.confidence for b in rel.bins],
            [b.accuracy for b in rel.bins],
            color=PALETTE[0],
            linewidth=1,
        )
        for b in rel.bins:  # the analysis's interval of each bin's observed rate
            if not (math.isnan(b.ci_low) or math.isnan(b.ci_high)):
                ax.plot([b.confidence] * 2, [b.ci_low, b.ci_high], color=PALETTE[0], lw=0.9)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("stated confidence")
        ax.set_ylabel("share answered ✓")
        verdict = f", {rel.verdict}" if rel.verdict else ""
        ax.set_title(f"ECE {rel.ece:.3f} over {rel.n} queries{verdict}", fontsize=9)
        ax.legend(loc="upper left", fontsize=7)
        return _svg(fig, name, f"reliability diagram, expected calibration error {rel.ece:.3f}")


@kept
def deltas_svg(
    rows: Sequence[DeltaRow],
    metric: str,
    name: str = "deltas",
    *,
    labels: Sequence[str] | None = None,
    xlabel: str | None = None,
) -> str:
    """Per-slice change of one metric against the baseline: the delta with the
    corrected interval, marked by verdict shape (▲ improved, ▼ regressed, ● noise).

    ``labels`` (one per row) and ``xlabel`` replace the slice labels and the axis
    title, for rows that are not slices (the Python API's runs x metrics).
    """
    shown = list(labels) if labels is not None else [f"{r.field}={r.value} (n={r.n})" for r in rows]
    with _rc():
        fig = _figure(7.2, 1.3 + 0.26 * len(rows))
        ax = fig.subplots()
        _margins(fig, left=_label_inches(shown), bottom=0.8, top=0.1)
        seen: set[str] = set()
        for j, row in enumerate(rows):
            marker, colour, _ = VERDICT_MARKS.get(row.verdict, VERDICT_MARKS["within noise"])
            if math.isinf(row.low) or math.isinf(row.high):
                # unbounded: too few queries for the level the correction asks; span the axes
                ax.hlines(
                    j,
                    0,
                    1,
                    transform=ax.get_yaxis_transform(),
                    colors=colour,
                    linestyles=":",
                    linewidth=1.0,
                )
            elif not (math.isnan(row.low) or math.isnan(row.high)):
                ax.plot([row.low, row.high], [j, j], color=colour, linewidth=1.6)
            ax.scatter(
                [row.delta],
                [j],
                marker=marker,
                s=40,
                color=colour,
                zorder=3,
                label=row.verdict if row.verdict not in seen else None,
            )
            seen.add(row.verdict)
        ax.axvline(0, color="#000000", linewidth=0.8)
        ax.set_yticks(range(len(rows)), [_short(label) for label in shown])
        ax.invert_yaxis()
        ax.set_xlabel(xlabel or f"Δ {metric} (this run − baseline), corrected interval")
        ax.grid(axis="y", visible=False)
        fig.legend(loc="lower center", ncols=3)
        return _svg(fig, name, f"per-slice change of {metric} against the baseline")
