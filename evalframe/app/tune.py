"""The end of a tuning sweep: the chosen configuration, once, on the held-out queries.

A tuning sweep is a ``-m`` sweep whose config sets ``tuning.metric`` and
``tuning.part=tune``: every trial (Optuna's, or a grid of the basic sweeper)
is scored on the tuning part of the golden set only, and returns the mean of
``tuning.metric`` as its objective. When the sweep ends, in the process that
started it, :func:`finish_tuning` picks the best trial from the jobs' folders
(not from the sweeper's memory, so any sweeper and launcher work), runs its
exact config once more on the held-out part (``<sweep>/heldout``), and writes
``tuning.json`` and ``tuning.md`` with both figures side by side and the gap.
The held-out queries are scored once, after the choice: they cannot steer it.

Those runs belong to the sweep as much as its trials do: each is handed to the
trackers as a run of the sweep (``metadata["sweep"]``, its ``num`` the run's
folder name, ``heldout`` or ``untuned_<part>``), with a ``label`` that says what
it is and the overrides that give its config, so a tracker files it under the
sweep and names it like a trial (``held-out: k1=2.4,b=0.53``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import yaml

from evalframe.assess.runfolder import RunFolder, SweepFolder
from evalframe.core.errors import EvalframeError
from evalframe.core.io import atomic_write, atomic_write_json
from evalframe.plugin.hooks import SweepJob

__all__ = [
    "HELDOUT_LABEL",
    "UNTUNED_LABELS",
    "best_job",
    "finish_tuning",
    "render_tuning",
    "untuned_overrides",
]

#: What the held-out and untuned runs are called within the sweep (their ``label``).
HELDOUT_LABEL = "held-out"
UNTUNED_LABELS = {"tune": "untuned (tuning part)", "heldout": "untuned (held-out part)"}


def _objective(job: SweepJob, metric: str) -> float | None:
    if job.exit_code not in (0, 1):  # a gate failure is still a measured trial
        return None
    value = (job.summary.get("overall", {}).get(metric) or {}).get("mean")
    if not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def best_job(jobs: list[SweepJob], metric: str, direction: str) -> SweepJob | None:
    """The trial with the best objective; the earliest one of equal ones."""
    scored = [(v, j) for j in jobs if (v := _objective(j, metric)) is not None]
    if not scored:
        return None
    sign = -1.0 if direction == "maximize" else 1.0
    return min(scored, key=lambda vj: (sign * vj[0], vj[1].num))[1]


def _figures(overall: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m: {"mean": a.get("mean"), "n": a.get("n")} for m, a in overall.items()}


def finish_tuning(config: Any, swept: tuple[str, ...] = ()) -> None:
    """After a tuning sweep: evaluate the best trial on the held-out part; write the summary.

    ``swept`` are the keys the sweep varies: the untuned runs are named and tagged
    with the sweep's own values of them.
    """
    from omegaconf import OmegaConf

    tuning = OmegaConf.select(config, "tuning", default=None)
    if tuning is None or tuning.get("metric") is None or tuning.get("part") != "tune":
        return
    sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
    try:
        _finish(
            sweep_dir,
            str(tuning.metric),
            str(tuning.get("direction", "maximize")),
            config,
            swept,
        )
    except EvalframeError as exc:
        print(f"warning: the held-out evaluation did not run: {exc.render()}", file=sys.stderr)


def _untuned(config: Any, part: str, out: Path) -> dict[str, Any] | None:
    """The sweep's own config (no trial's parameters) on one part, or None if it does not
    resolve outside a job. Scored on both parts, it shows how much of the gap is there
    before any tuning: the two parts need not be equally hard."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        plain = OmegaConf.to_container(config, resolve=False)
        if not isinstance(plain, dict):
            return None
        plain.pop("hydra", None)
        cfg = OmegaConf.create(plain)
        cfg.tuning.part = part
        cfg.output.dir = str(out)
        raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException:
        return None
    return {str(k): v for k, v in raw.items()} if isinstance(raw, dict) else None


def _sweep_metadata(
    sweep_dir: Path,
    folder: Path,
    label: str,
    overrides: list[str],
    part: str,
    choices: dict[str, str],
) -> dict[str, Any]:
    """What trackers hear of a run the sweep made beside its jobs (module docstring).
    Its overrides end with the part it scored (``tuning.part=heldout``), in place of
    any the sweep's command line gave: they say how to get its config."""
    given = [o for o in overrides if not o.lstrip("+~").startswith("tuning.part=")]
    sweep = {
        "dir": str(sweep_dir),
        "num": folder.name,
        "overrides": [*given, f"tuning.part={part}"],
        "label": label,
    }
    return {"choices": choices, "sweep": sweep}


def _choices(hydra_node: Any) -> dict[str, str]:
    """Hydra's choice in every config group (``retriever: bm25``), Hydra's own left out."""
    from omegaconf import OmegaConf

    found = OmegaConf.select(hydra_node, "runtime.choices", default=None) or {}
    return {str(k): str(v) for k, v in found.items() if not str(k).startswith("hydra")}


def _job_choices(job: SweepJob) -> dict[str, str] | None:
    """The choices of a job, from the ``.hydra/hydra.yaml`` Hydra wrote into its folder."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        return _choices(OmegaConf.load(job.output_dir / ".hydra" / "hydra.yaml").hydra)
    except (OSError, OmegaConfBaseException):
        return None


def _text(value: Any) -> str:
    """A config value as an override writes it (``true``, ``null``, ``0.75``)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return (
        str(value)
        if isinstance(value, int | float | str)
        else yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    )


def untuned_overrides(
    task: list[str], swept: tuple[str, ...], typed: dict[str, Any], choices: dict[str, str]
) -> list[str]:
    """The overrides that give the untuned config: each swept key at the sweep's own
    value (``retriever.k1=1.2``; a group at its choice), then the sweep's command-line
    overrides that are not sweeps (``+experiment=...``).

    Everything as typed: values are read from the sweep's config unresolved
    (``typed``), as a job's overrides are, so ``${oc.env:TOKEN}`` stays a reference
    and never becomes the secret in a run's name or tags.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    values = []
    for key in swept:
        if key in choices:
            values.append(f"{key}={choices[key]}")
            continue
        node: Any = typed
        for part in key.split("."):
            node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
        if node is not _MISSING:
            values.append(f"{key}={_text(node)}")
    parser = OverridesParser.create()
    kept = []
    for line in task:
        try:
            (override,) = parser.parse_overrides([line])
        except Exception:  # noqa: BLE001  # not ours to judge: Hydra ran with it
            continue
        if not override.is_sweep_override() and override.key_or_group not in swept:
            kept.append(line)
    return values + kept


_MISSING = object()


def _finish(
    sweep_dir: Path,
    metric: str,
    direction: str,
    config: Any = None,
    swept: tuple[str, ...] = (),
) -> None:
    from evalframe.metrics import parse_metric
    from evalframe.pipeline import run_experiment, validate_experiment
    from evalframe.report.page import RunPage

    metric = str(parse_metric(metric))
    jobs = SweepFolder(sweep_dir).jobs()
    best = best_job(jobs, metric, direction)
    if best is None:
        print(
            f"warning: no trial of the tuning sweep in {sweep_dir} has a value of {metric}; "
            "nothing to evaluate on the held-out queries",
            file=sys.stderr,
        )
        return
    out = sweep_dir / "heldout"
    own_choices = _choices(config.hydra) if config is not None and "hydra" in config else {}
    typed = _typed(config)
    heldout = _sweep_metadata(
        sweep_dir,
        out,
        HELDOUT_LABEL,
        list(best.overrides),
        "heldout",
        _job_choices(best) or own_choices,
    )
    # with its page and summary.md, as a trial has: the held-out figure is the one to report,
    # and a tracker shows the page and the summary (MLflow's description) of each run
    result = run_experiment(
        validate_experiment(_heldout_config(best, out)),
        reporters=[RunPage()],
        progress=False,
        metadata=heldout,
    )
    held = RunFolder(out).summary()
    split = held.get("golden_set", {}).get("provenance", {}).get("split", {})
    report = {
        "metric": metric,
        "direction": direction,
        "trials": len(jobs),
        "scored_trials": sum(1 for j in jobs if _objective(j, metric) is not None),
        "best": {
            "job": best.num,
            "folder": str(best.output_dir),
            # what sets this trial apart: the overrides every trial shares are left out
            "overrides": [o for o in best.overrides if not all(o in j.overrides for j in jobs)],
            "objective": _objective(best, metric),
        },
        "split": split,
        "tuning": _figures(best.summary.get("overall", {})),
        "heldout": _figures(held.get("overall", {})),
        "heldout_folder": str(out),
        "heldout_exit_code": result.exit_code,
    }
    gaps: dict[str, float | None] = {}
    for m, figures in report["tuning"].items():
        tuned, held_out = figures.get("mean"), report["heldout"].get(m, {}).get("mean")
        both = isinstance(tuned, float) and isinstance(held_out, float)
        gaps[m] = tuned - held_out if both else None
    report["gap"] = gaps
    untuned: dict[str, Any] = {}
    for part in ("tune", "heldout"):
        folder = sweep_dir / f"untuned_{part}"
        raw = _untuned(config, part, folder) if config is not None else None
        if raw is None:
            break
        overrides = untuned_overrides(_task(config), swept, typed, own_choices)
        label = UNTUNED_LABELS[part]
        meta = _sweep_metadata(sweep_dir, folder, label, overrides, part, own_choices)
        run_experiment(
            validate_experiment(raw), reporters=[RunPage()], progress=False, metadata=meta
        )
        untuned[part] = _figures(RunFolder(folder).summary().get("overall", {}))
    if len(untuned) == 2:
        report["untuned"] = untuned
    atomic_write_json(sweep_dir / SweepFolder.TUNING_JSON, report)
    atomic_write(sweep_dir / SweepFolder.TUNING_MD, render_tuning(report, markdown=True) + "\n")
    print(render_tuning(report))


def _typed(config: Any) -> dict[str, Any]:
    """The sweep's config as typed: interpolations left unresolved."""
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(config, resolve=False) if config is not None else {}
    return {str(k): v for k, v in plain.items()} if isinstance(plain, dict) else {}


def _task(config: Any) -> list[str]:
    """The sweep's command-line overrides, as typed (``${oc.env:...}`` left unresolved)."""
    from omegaconf import OmegaConf

    task = OmegaConf.select(config, "hydra.overrides.task", default=None)
    raw = OmegaConf.to_container(task, resolve=False) if task is not None else []
    return [str(o) for o in raw] if isinstance(raw, list) else []


def _heldout_config(best: SweepJob, out: Path) -> dict[str, Any]:
    """The best trial's config, on the held-out part, written to ``out``.

    Hydra's own copy (``.hydra/config.yaml``) comes first: it still holds
    ``${oc.env:...}`` references where the run folder's ``config.yaml`` has
    secrets redacted, and a retriever that needs a key must get the key.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    hydra_copy = best.output_dir / ".hydra" / "config.yaml"
    if hydra_copy.is_file():
        try:
            cfg = OmegaConf.load(hydra_copy)
            cfg.tuning.part = "heldout"
            cfg.output.dir = str(out)
            raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
            if isinstance(raw, dict):
                return {str(k): v for k, v in raw.items()}
        except OmegaConfBaseException:
            pass  # an interpolation only Hydra's job could resolve: the resolved copy below
    config = yaml.safe_load(
        RunFolder(best.output_dir).require(RunFolder.CONFIG, "best trial's config").read_text()
    )
    config["tuning"] = {**config.get("tuning", {}), "part": "heldout"}
    config["output"] = {**config.get("output", {}), "dir": str(out)}
    return dict(config)


def _num(value: Any, signed: bool = False) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return "n/a"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def render_tuning(report: dict[str, Any], *, markdown: bool = False) -> str:
    """Tuning and held-out figures of the chosen configuration side by side, with the gap."""
    split, best = report.get("split", {}), report["best"]
    whole = split.get("of", {})
    n_tune, n_held = split.get("tune_queries"), split.get("heldout_queries")
    lines = [
        f"Tuning: {report['metric']} ({report['direction']}), {report['scored_trials']} of "
        f"{report['trials']} trials scored on the tuning queries",
        f"  split: seed {split.get('seed')}, fraction {split.get('fraction')} of "
        f"{whole.get('name')}@{whole.get('content_hash')} ({whole.get('queries')} queries): "
        f"{n_tune} tuning, {n_held} held-out",
        f"  best: job {best['job']}: {' '.join(best['overrides']) or '(no overrides)'}",
        "",
    ]
    header = ["metric", f"tuning (n={n_tune})", f"held-out (n={n_held})", "gap"]
    untuned = report.get("untuned")
    if untuned:
        header += ["untuned: tuning", "held-out", "gap"]
    rows = []
    for m, t in report["tuning"].items():
        row = [
            m + (" *" if m == report["metric"] else ""),
            _num(t.get("mean")),
            _num(report["heldout"].get(m, {}).get("mean")),
            _num(report["gap"].get(m), signed=True),
        ]
        if untuned:
            a, b = (untuned[p].get(m, {}).get("mean") for p in ("tune", "heldout"))
            both = isinstance(a, float) and isinstance(b, float)
            row += [_num(a), _num(b), _num(a - b if both else None, signed=True)]
        rows.append(row)
    if markdown:
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        fmt = [f"{{:<{widths[0]}}}", *(f"{{:>{w}}}" for w in widths[1:])]
        for r in [header, *rows]:
            lines.append("  " + "  ".join(f.format(c) for f, c in zip(fmt, r, strict=True)))
    # in Markdown (tuning.md, a tracker's description) a line starting "* " is a list item
    star = "\\*" if markdown else "*"
    lines += [
        "",
        f"  {star} the objective. gap = tuning − held-out. The held-out figure is the one to "
        "report.",
    ]
    fewer = []  # a metric that skips queries (negative examples) averages over fewer than n
    for m, t in report["tuning"].items():
        nt, nh = t.get("n"), report["heldout"].get(m, {}).get("n")
        if (isinstance(nt, int) and nt != n_tune) or (isinstance(nh, int) and nh != n_held):
            fewer.append(f"{m} {nt} and {nh}")
    if fewer:
        lines.append(
            "  n counts each part's queries; a metric that skips some (negative examples) "
            f"averages over fewer, tuning and held-out: {', '.join(fewer)}."
        )
    if untuned:
        m = report["metric"]
        gain: list[float | None] = []
        for tuned_part, untuned_part in (("tuning", "tune"), ("heldout", "heldout")):
            a, b = (
                report[tuned_part].get(m, {}).get("mean"),
                untuned[untuned_part].get(m, {}).get("mean"),
            )
            gain.append(a - b if isinstance(a, float) and isinstance(b, float) else None)
        lines.append(
            f"  untuned: the sweep's own settings on both parts (the gap before any tuning). "
            f"Tuning moved {m} by {_num(gain[0], signed=True)} on the tuning queries and by "
            f"{_num(gain[1], signed=True)} on the held-out ones."
        )
    lines.append(f"  held-out run: {report['heldout_folder']}")
    return "\n".join(lines)
