"""``evalframe runs``, ``evalframe sync``, ``evalframe ui`` and MLflow run ids in ``compare``.

These are added to evalframe's command line through the ``evalframe.app.commands``
and ``evalframe.run_sources`` entry-point groups, exactly as a third party's
would be; the core knows nothing of MLflow.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalframe.core.argtypes import number, whole
from evalframe.core.errors import EXIT_ERROR, ConfigError, DataError, EvalframeError
from evalframe.core.secrets import redact_text
from evalframe_mlflow.upload import artifact_location_for, resolve_uri

__all__ = ["fetch_run", "group_members", "runs_main", "serve", "sync_main", "ui_main"]

_RUN_ID = re.compile(r"^(?:runs:/|mlflow:)?([0-9a-f]{32})/?$")
#: The first characters of a run id, as `evalframe runs` prints them (8), or more.
_RUN_ID_PREFIX = re.compile(r"^(?:runs:/|mlflow:)?([0-9a-f]{6,31})/?$")


def _store_exists(uri: str) -> bool:
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///") :]).is_file()
    return True


def _check_readable(uri: str) -> None:
    """A sqlite store that is a folder, unreadable or no database: an error now, not
    after MLflow has retried opening it for a minute and a half."""
    from evalframe_mlflow.upload import StoreUnusableError, check_sqlite_store

    try:
        check_sqlite_store(uri, write=False)
    except StoreUnusableError as exc:
        raise ConfigError(
            f"cannot read the MLflow store at {uri}: {exc.problem}", hint=exc.fix
        ) from None


def _no_store(uri: str) -> ConfigError:
    return ConfigError(
        f"there is no MLflow store at {uri}",
        expected="the store your runs were logged to",
        hint="run an experiment first (tracking is on by default), run from the folder that "
        "holds mlflow.db, or pass --uri / set MLFLOW_TRACKING_URI",
    )


# -- evalframe runs --------------------------------------------------------------
def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _varying_params(runs: list[Any], limit: int | None = 4) -> tuple[list[str], int]:
    """Params whose value differs between the listed runs, what tells them apart: the
    first ``limit`` of them (None: all), and how many differ in all.

    Ranked so that the few shown say the most: a plugin's ``name`` first (which
    retriever), then the params whose value differs among the runs that have them
    (the swept ones), then those some runs lack (a dense run's ``batch_size``
    beside bm25 runs: it follows from the name), each group by key. Sweep parents
    are left out (they have no config params). When nothing differs, the
    retriever and dataset names are shown.
    """
    jobs = [r for r in runs if r.data.tags.get("evalframe.sweep") != "true"]
    values: dict[str, set[str]] = {}
    for run in jobs:
        for k, v in run.data.params.items():
            values.setdefault(k, set()).add(v)
    varying = [
        k
        for k, vals in values.items()
        if not k.startswith(("output.", "tracking."))
        and (len(vals) > 1 or any(k not in r.data.params for r in jobs))
    ]
    varying.sort(
        key=lambda k: (
            not k.endswith(".name"),
            len(values[k]) < 2,  # differs only by being absent from some runs
            not k.startswith("retriever."),
            k,
        )
    )
    if not varying:
        varying = [k for k in ("retriever.name", "dataset.name") if k in values]
    return (varying if limit is None else varying[:limit]), len(varying)


def _result(run: Any) -> str:
    """One word for how a run ended: its gate verdict, or its status when it did not finish."""
    tags = run.data.tags
    if tags.get("evalframe.sweep") == "true":
        return "sweep" if run.info.status == "FINISHED" else f"sweep {run.info.status.lower()}"
    if run.info.status == "FAILED":  # stopped by an error: not a failed gate's FAILED
        return "error"
    if run.info.status != "FINISHED":
        return str(run.info.status).lower()
    if tags.get("evalframe.verdict") == "unchecked":  # no required gate: nothing was checked
        return "unchecked"
    return {"true": "passed", "false": "FAILED"}.get(tags.get("evalframe.gates_passed", ""), "—")


class _Values:
    """A run's metric values: logged ones, else the overall means of its metrics table."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.tables: dict[str, dict[str, float]] = {}

    def get(self, run: Any, metric: str) -> float | None:
        from evalframe_mlflow.keys import metric_key

        key = metric_key(metric)
        logged = run.data.metrics.get(key, run.data.metrics.get(f"best/{key}"))
        if logged is not None or run.data.tags.get("evalframe.sweep") == "true":
            return logged  # type: ignore[no-any-return]
        return self._table(run).get(metric)

    def _table(self, run: Any) -> dict[str, float]:
        """``metrics_table.json``'s overall means (only fetched for a metric not logged)."""
        import tempfile

        from evalframe_mlflow.record import TABLE_FILE

        run_id = run.info.run_id
        if run_id in self.tables:
            return self.tables[run_id]
        self.tables[run_id] = {}
        if TABLE_FILE not in run.data.tags.get("mlflow.loggedArtifacts", ""):
            return self.tables[run_id]
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = self.client.download_artifacts(run_id, TABLE_FILE, tmp)
                split = json.loads(Path(path).read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001  # a missing artifact leaves the cell empty
            return self.tables[run_id]
        cols = split.get("columns") or []
        for row in split.get("data") or []:
            cell = dict(zip(cols, row, strict=False))
            if cell.get("slice") == "overall" and isinstance(cell.get("mean"), int | float):
                self.tables[run_id][str(cell.get("metric"))] = float(cell["mean"])
        return self.tables[run_id]


def _short_param(param: str) -> str:
    """A param's column head in the narrow table: its last part (``retriever.k1`` as
    ``k1``), or as a run name shows it when that part is generic (``gates.mrr.value``
    as ``mrr.value``, :func:`~evalframe_mlflow.record.short_key`); a plugin's ``name``
    as its section (``retriever.name`` as ``retriever``: the run's retriever)."""
    from evalframe_mlflow.record import short_key

    parts = param.split(".")
    return parts[-2] if len(parts) > 1 and parts[-1] == "name" else short_key(param)


def _short_params(params: list[str], taken: Sequence[str] = ()) -> list[str]:
    """Each param's :func:`_short_param`, or its full key where that would head two
    columns: another shown param's, or one of ``taken`` (the table's own columns,
    ``name`` among them, and its metrics)."""
    tails = [_short_param(p) for p in params]
    return [
        t if tails.count(t) == 1 and t not in taken else p
        for p, t in zip(params, tails, strict=True)
    ]


def runs_table(
    runs: list[Any],
    metrics: list[str],
    params: list[str],
    *,
    values: _Values | None = None,
    wide: bool = False,
) -> tuple[list[str], list[list[str]]]:
    """The header and one row per run; a sweep's jobs follow their parent, marked ``└``.

    Narrow (the default) drops what the title already says: the experiment
    column when all runs share one, the seconds, most of the run id.
    """
    header = ["run", "name", "experiment", "started", "result", *metrics, *params]
    children: dict[str, list[Any]] = {}
    top = []
    ids = {r.info.run_id for r in runs}
    for run in runs:
        parent = run.data.tags.get("mlflow.parentRunId")
        if parent and parent in ids:
            children.setdefault(parent, []).append(run)
        else:
            top.append(run)

    def value(run: Any, metric: str) -> Any:
        if values is not None:
            return values.get(run, metric)
        from evalframe_mlflow.keys import metric_key

        key = metric_key(metric)
        return run.data.metrics.get(key, run.data.metrics.get(f"best/{key}"))

    def row(run: Any, indent: str) -> list[str]:
        started = datetime.fromtimestamp(run.info.start_time / 1000, tz=timezone.utc)
        cells = [
            indent + run.info.run_id[: 32 if wide else 8],
            run.info.run_name or "",
            run.data.tags.get("evalframe.experiment", ""),
            started.strftime("%Y-%m-%d %H:%M" if wide else "%m-%d %H:%M"),
            _result(run),
        ]
        cells += [_fmt(value(run, m)) for m in metrics]
        cells += [run.data.params.get(p, "—") for p in params]
        return cells

    rows = []
    for run in top:
        rows.append(row(run, ""))
        for child in sorted(children.get(run.info.run_id, []), key=_job_order):
            rows.append(row(child, "└ "))
    return header, rows


def _job_order(run: Any) -> tuple[int, int]:
    """Sweep jobs by number, then the runs a tuning sweep makes after them (``heldout``,
    ``untuned_*``) in the order they ran."""
    job = run.data.tags.get("evalframe.sweep_job") or "0"
    return (0, int(job)) if job.isdigit() else (1, int(run.info.start_time or 0))


def _headline(runs: list[Any], everything: bool) -> list[str]:
    """The runs' headline metrics (tag ``evalframe.headline``), or with ``everything``
    every metric of their experiments (``evalframe.metrics``); in first-seen order."""
    names: list[str] = []
    for run in runs:
        listed = run.data.tags.get("evalframe.metrics" if everything else "evalframe.headline")
        try:
            ordered = json.loads(listed or "[]")
        except ValueError:  # cut to MLflow's tag length
            ordered = []
        if not ordered and not everything:  # a run logged before headlines: its first three
            try:
                ordered = json.loads(run.data.tags.get("evalframe.metrics") or "[]")[:3]
            except ValueError:
                ordered = []
        if not ordered:
            ordered = sorted(
                v for t, v in run.data.tags.items() if t.startswith("evalframe.metric.")
            )
        names.extend(n for n in ordered if n not in names)
    return names


def render_runs(
    runs: list[Any],
    metrics: list[str],
    params: list[str],
    *,
    values: _Values | None = None,
    wide: bool = False,
    color: bool = False,
    width: int | None = None,
) -> str:
    """The runs as a table that fits ``width`` (100 columns unless ``wide``).

    Narrow, the table leaves out what its title says (the experiment, when
    all runs share one) and shortens params to their last part (``k1``); a
    table still too wide (``--all``) is stacked in parts that each start with
    the run and its name.
    """
    from evalframe.core.console import Col, fit_width, render, split_columns, table

    width = width or fit_width(wide)
    header, rows = runs_table(runs, metrics, params, values=values, wide=wide)
    n_fixed = 5
    experiments = sorted({r[2] for r in rows if r[2]})
    one_experiment = not wide and len(experiments) <= 1
    shown = params if wide else _short_params(params, [*header[:n_fixed], *metrics])
    # run, name, result | metrics | params | started, experiment
    order = [0, 1, 4]
    order += list(range(n_fixed, n_fixed + len(metrics) + len(params)))
    order += [3] if one_experiment else [3, 2]
    fixed = {
        0: Col("run", "id"),
        1: Col("name", "id", max_width=None if wide else 24),
        2: Col("experiment", "id", max_width=None if wide else 16),
        3: Col("started", "id"),
        4: Col("result", "id"),
    }
    cols = []
    for i in order:
        if i in fixed:
            cols.append(fixed[i])
        elif i < n_fixed + len(metrics):
            cols.append(Col(header[i], "number"))
        else:
            cols.append(Col(shown[i - n_fixed - len(metrics)], "text"))
    body = [[r[i] for i in order] for r in rows]
    title = f"Runs of {experiments[0]}" if len(experiments) == 1 else "Runs"
    styled = [None if r[0].startswith("└") else "bold" for r in rows] if color else None
    parts = split_columns(cols, body, keep=3, width=width)
    if len(parts) > 1:  # when's and where's go before a table is stacked in parts
        dropped = {i for i, c in enumerate(cols) if c.header in ("started", "experiment")}
        less_cols = [c for i, c in enumerate(cols) if i not in dropped]
        less_body = [[v for i, v in enumerate(r) if i not in dropped] for r in body]
        fewer = split_columns(less_cols, less_body, keep=3, width=width)
        if len(fewer) < len(parts):
            cols, body, parts = less_cols, less_body, fewer
    drawn = []
    for n, part in enumerate(parts):
        label = title if len(parts) == 1 else f"{title} ({n + 1} of {len(parts)})"
        if n:
            drawn.append("")
        drawn.append(
            table([cols[i] for i in part], [[r[i] for i in part] for r in body], title=label,
                  styles=styled)
        )  # fmt: skip
    return render(*drawn, width=width, color=color)


#: ``runs --max``: MLflow's search_runs takes at most 50,000 a call.
_max_runs = whole(1, 50000)


def runs_main(argv: Sequence[str]) -> int:
    """The runs in the MLflow store, as a table (MLflow)."""
    parser = argparse.ArgumentParser(
        prog="evalframe runs",
        description="Runs in the MLflow store as a table: metrics, the params that differ, "
        "gate verdicts; sweep jobs under their parent.",
    )
    parser.add_argument("--uri", help="tracking URI (default: $MLFLOW_TRACKING_URI or ./mlflow.db)")
    parser.add_argument(
        "--experiment", "-e", action="append", help="MLflow experiment (repeatable; default: all)"
    )
    parser.add_argument(
        "--filter",
        "-f",
        default="",
        help='MLflow search filter, e.g. "metrics.ndcg_at_10 > 0.5" or '
        "\"params.retriever.name = 'bm25'\"",
    )
    parser.add_argument(
        "--metrics",
        "-m",
        nargs="+",
        help="canonical metric names to show (default: the runs' headline metrics)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every metric of the runs' experiments, not just the headline (values that were "
        "not logged as metrics are read from each run's metrics table)",
    )
    parser.add_argument(
        "--wide",
        action="store_true",
        help="lay every column out in full instead of fitting 100 columns",
    )
    parser.add_argument(
        "--params",
        "-p",
        nargs="+",
        help="param keys to show (default: those that differ between runs)",
    )
    parser.add_argument(
        "--max",
        type=_max_runs,
        default=50,
        help="at most this many runs, 1 to 50000 (newest first)",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(list(argv))
    try:
        return _runs(args)
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `evalframe runs | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _unreachable(uri: str, exc: Exception) -> ConfigError:
    from evalframe_mlflow.upload import failure_reason

    return ConfigError(
        f"cannot read the MLflow store at {uri} ({failure_reason(exc)})",
        expected="a running tracking server or an existing sqlite store",
        hint="start the server, or pass --uri / set MLFLOW_TRACKING_URI to the right store",
    )


def _shown_metric(name: str, index: int) -> str:
    """``--metrics`` NAME as the column it names: a metric's canonical string (``MRR`` is
    ``RR``), or, as given, another key the runs log (``latency.p95_ms``, ``queries``,
    ``R@5.ci_low``, ``slice.difficulty.easy.R@5``). A name that looks like a metric (an
    ``@`` or a parameter list) and reads as none in any of its parts is refused."""
    from evalframe.metrics import parse_metric

    try:
        return str(parse_metric(name))
    except ConfigError:
        pass
    if "@" not in name and "(" not in name:
        return name
    parts = [name.rsplit(".", 1)[0], *name.split(".")]  # R@5.ci_low; slice.f.v.R@5
    for part in parts:
        try:
            parse_metric(part)
            return name
        except ConfigError:
            continue
    parse_metric(name, key=f"--metrics[{index}]")  # raises, naming the option
    return name


def _runs(args: argparse.Namespace) -> int:
    if args.metrics:  # a name no metric has showed a column of dashes, exit 0
        args.metrics = [_shown_metric(name, i) for i, name in enumerate(args.metrics)]
    uri = resolve_uri(args.uri)
    _check_readable(uri)
    if not _store_exists(uri):
        raise _no_store(uri)
    try:
        return _list_runs(args, uri)
    except (EvalframeError, BrokenPipeError):
        raise
    except Exception as exc:  # noqa: BLE001  # a server that is down or a broken store
        raise _unreachable(uri, exc) from None


def _list_runs(args: argparse.Namespace, uri: str) -> int:
    from evalframe_mlflow.upload import Uploader

    client = Uploader(uri, timeout_seconds=5, retries=1, write=False).client
    if args.experiment:
        exps = []
        for name in args.experiment:
            found = client.get_experiment_by_name(name)
            if found is None:
                known = sorted(e.name for e in client.search_experiments())
                raise ConfigError(
                    f"no MLflow experiment named {name!r} in {uri}",
                    key="--experiment",
                    expected=f"one of: {', '.join(known) or '(none yet)'}",
                )
            exps.append(found.experiment_id)
    else:
        exps = [e.experiment_id for e in client.search_experiments()]
    try:
        runs = (
            client.search_runs(
                exps,
                filter_string=args.filter,
                max_results=args.max,
                order_by=["attributes.start_time DESC"],
            )
            if exps
            else []
        )
    except Exception as exc:  # MLflow reports a bad filter as a generic exception
        # the store answered the experiments' search just now: with a filter, an error
        # MLflow marks as a bad parameter is the filter's ("Expected numeric value type
        # for metric. Found x" too); a server error or a timeout is not
        said = str(exc).lower()
        bad_value = getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE"
        if args.filter and (bad_value or "filter" in said or "invalid" in said):
            raise ConfigError(
                f"MLflow rejected the filter: {str(exc).splitlines()[0]}",
                key="--filter",
                expected="MLflow search syntax: metrics.KEY > 0.5, params.KEY = 'x', "
                "tags.`evalframe.gates_passed` = 'true' (metric keys use _at_ for @)",
                got=repr(args.filter),
            ) from None
        raise
    from evalframe.core.console import color_for

    metrics = args.metrics or _headline(list(runs), args.all)
    # every differing param in JSON and with --wide; the four that say the most otherwise
    params, differing = _varying_params(runs, None if args.json or args.wide else 4)
    params = args.params or params
    values = _Values(client)
    if args.json:
        header, rows = runs_table(list(runs), metrics, params, values=values, wide=True)
        # params get their own prefix: a param may be named like a column (experiment)
        keys = header[: len(header) - len(params)] + [f"params.{p}" for p in params]
        print(json.dumps([dict(zip(keys, r, strict=True)) for r in rows], indent=2))
    elif not runs:
        shown = redact_text(uri)
        print(f"no runs in {shown}" + (f" matching {args.filter!r}" if args.filter else ""))
    else:
        print(
            render_runs(
                list(runs), metrics, params, values=values, wide=args.wide, color=color_for()
            )
        )
        import textwrap

        from evalframe.core.console import fit_width

        more = (
            "" if args.all or args.metrics else " Headline metrics shown: --all for every metric."
        )
        if not args.params and differing > len(params):
            more += (
                f" {differing - len(params)} more param(s) differ: --wide shows them, "
                "--params picks."
            )
        note = (
            f"{len(runs)} run(s) in {redact_text(uri)}.{more} "
            "Open them side by side with `evalframe ui`."
        )
        print()
        print(textwrap.fill(note, fit_width(args.wide), break_long_words=False))
    return 0


# -- evalframe sync --------------------------------------------------------------
def sync_main(argv: Sequence[str]) -> int:
    """Upload runs logged while MLflow was unreachable."""
    parser = argparse.ArgumentParser(
        prog="evalframe sync",
        description="Upload the MLflow records of runs that finished while the tracking "
        "server was unreachable (mlflow_pending.json). Each is uploaded exactly once.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help="run or sweep folders, or folders to search (default: every record this machine left)",
    )
    parser.add_argument("--uri", help="upload here instead of the URI each record names")
    parser.add_argument(
        "--timeout", type=number(0, above=True), default=5, help="seconds per HTTP request"
    )
    parser.add_argument(
        "--retries",
        type=whole(0),
        default=1,
        help="MLflow HTTP retries per request (MLFLOW_HTTP_REQUEST_MAX_RETRIES; default 1)",
    )
    args = parser.parse_args(list(argv))

    from evalframe_mlflow.pending import find_pending_in, indexed_records, relpath, sync
    from evalframe_mlflow.record import PENDING_FILE

    for p in args.paths:
        # a path given on the command line is no config key (it said "config key paths")
        if not p.exists():
            said = DataError(
                f"{p} does not exist",
                expected="a run folder, a sweep folder or a folder to search",
            )
        elif p.is_file() and p.name != PENDING_FILE:  # "nothing to sync", exit 0, before
            said = DataError(
                f"{p} is a file, and no {PENDING_FILE}",
                expected=f"a run folder, a sweep folder, a folder to search or a {PENDING_FILE}",
            )
        else:
            continue
        print(said.render(), file=sys.stderr)
        return EXIT_ERROR
    records = find_pending_in(args.paths) if args.paths else indexed_records()
    if not records:
        print(
            "nothing to sync: no pending MLflow records"
            + (f" under {', '.join(map(str, args.paths))}" if args.paths else "")
        )
        return 0
    results = sync(records, uri=args.uri, timeout_seconds=args.timeout, retries=args.retries)
    failed = 0
    for r in results:
        if r.status in ("failed", "busy", "damaged"):
            failed += 1
            print(f"✗ {relpath(r.path)}: {r.message}")
        else:
            print(f"✓ {relpath(r.path.parent)}: {r.status} as run {r.run_id}")
    print(f"{len(results) - failed} synced, {failed} still pending")
    # a damaged record is the user's to fix (2); one the server did not take may go later (1)
    if any(r.status == "damaged" for r in results):
        return EXIT_ERROR
    return 0 if not failed else 1


# -- evalframe ui -------------------------------------------------------------------
def ui_main(argv: Sequence[str]) -> int:
    """The MLflow UI on the default store (127.0.0.1)."""
    parser = argparse.ArgumentParser(
        prog="evalframe ui", description="Start the MLflow UI on the store, on 127.0.0.1."
    )
    parser.add_argument(
        "--uri", help="backend store (default: $MLFLOW_TRACKING_URI or ./mlflow.db)"
    )
    parser.add_argument("--port", type=whole(1, 65535), default=5000, help="(default 5000)")
    parser.add_argument(
        "--workers", type=whole(1, 64), default=1, help="server processes (default 1)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="keep 127.0.0.1 unless you mean to share it"
    )
    args = parser.parse_args(list(argv))
    uri = resolve_uri(args.uri)
    if uri.startswith(("http://", "https://")):
        print(f"{redact_text(uri)} is a tracking server: open it in your browser; nothing to start")
        return 0
    try:
        _check_readable(uri)
    except ConfigError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
    if not _store_exists(uri):
        print(_no_store(uri).render(), file=sys.stderr)
        return EXIT_ERROR
    address = f"http://{args.host}:{args.port}"
    taken = port_taken(args.host, args.port)
    if taken is not None:
        print(taken.render(), file=sys.stderr)
        return EXIT_ERROR
    print(f"MLflow UI for {uri} at {address}/#/experiments (Ctrl-C stops it)")
    if has_workflow_switch():
        print(WORKFLOW_HINT)
    sys.stdout.flush()
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri]
    artifacts = artifact_location_for(uri)
    if artifacts:
        # runs logged through a server keep their files here too (mlflow-artifacts:/ URIs)
        cmd += ["--artifacts-destination", artifacts]
    cmd += ["--host", args.host, "--port", str(args.port), "--workers", str(args.workers)]
    return serve(cmd, env=ui_environment(os.environ))


def port_taken(host: str, port: int) -> ConfigError | None:
    """Why ``evalframe ui`` cannot serve on ``host:port``, or None when it is free.

    Checked before MLflow starts: when uvicorn cannot bind, ``mlflow ui``
    logs the error among its start-up lines and exits 0, so the user would
    see a UI start, stop, and report success. A port that answers MLflow's
    ``/health`` is a UI already running: the error says to open it instead.
    (The port may still be taken between this check and the server's bind:
    then MLflow's own log line is all there is.)
    """
    import errno
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
                return ConfigError(
                    f"cannot serve the MLflow UI on {host}: {reason}",
                    key="--host",
                    expected="a name or address of this machine",
                    hint="keep the default, 127.0.0.1, unless you mean to share the UI",
                )
            if exc.errno != errno.EADDRINUSE:  # a port below 1024 without root, ...
                return ConfigError(
                    f"cannot serve the MLflow UI on {host}:{port}: {reason}",
                    key="--port",
                    expected="a port this user may listen on (1024 and above)",
                    hint="use another port (the default is 5000)",
                )
        else:
            return None
    url = f"http://{host}:{port}"
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            mlflow_there = resp.status == 200
    except OSError:
        mlflow_there = False
    hint = f"use another port (--port {port + 1})"
    if mlflow_there:
        hint = f"an MLflow server already answers there: open {url}, or {hint}"
    return ConfigError(
        f"cannot serve the MLflow UI on {host}:{port}: {reason}",
        key="--port",
        expected="a port no other program listens on",
        hint=hint,
    )


#: Said by `evalframe ui` where MLflow's UI has the "GenAI | Model training" switch.
WORKFLOW_HINT = (
    '  first time in this browser: pick "Model training" at the top of the side bar (once);\n'
    "  without it, experiments open on MLflow's GenAI overview, which shows no runs"
)


def has_workflow_switch() -> bool:
    """Whether the installed MLflow's UI picks an experiment's page by its side bar's switch.

    From 3.5 it does, for every experiment, ignoring the kind evalframe tags it
    with; the switch defaults to GenAI and is kept per browser once clicked. A
    link carrying ``workflowType=machine_learning`` shows the runs but makes the
    click a no-op (the switch already reads "Model training"), so the address
    printed carries none and the user is told to pick it once.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        major, minor = (int(part) for part in version("mlflow").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return True  # say it: harmless where the switch is absent
    return (major, minor) >= (3, 5)


#: MLflow's switch for the server's job runner (GenAI scorers, prompt optimisation).
JOB_EXECUTION = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"


def ui_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The UI's environment: MLflow's job runner off unless the user set the switch.

    Browsing runs needs none of it, and on by default it starts a job runner
    and seven huey consumers, each importing MLflow: measured on 2 cores, the
    UI answered after 14 s and held 1.8 GB in 10 processes; without them, 10 s
    and 0.5 GB in 2. A user who runs MLflow's GenAI jobs sets the variable to
    ``true`` and gets them back.
    """
    env = dict(environ)
    env.setdefault(JOB_EXECUTION, "false")
    return env


#: Seconds the UI's processes get to stop after SIGTERM before they are killed.
STOP_GRACE_SECONDS = 10.0


def group_members(pgid: int) -> list[int] | None:
    """Live (not zombie) processes of a process group, from /proc; None without /proc.

    Helpers orphaned by the server are reparented to init, which may be slow to
    reap them; a zombie has stopped, so it is not counted.
    """
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return None
    found = []
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


class _StopError(Exception):
    """SIGTERM or SIGHUP, turned into an exception like Ctrl-C's KeyboardInterrupt."""


def serve(
    cmd: list[str], grace: float = STOP_GRACE_SECONDS, env: Mapping[str, str] | None = None
) -> int:
    """Run ``cmd`` in a process group of its own; stop the whole group when we are stopped.

    ``mlflow ui`` starts uvicorn workers, and a job runner with huey consumers
    when MLflow's job execution is on (see ``ui_environment``).
    Ctrl-C reaches only this process (the server has its own group), and
    SIGTERM or SIGHUP too; either way every process of the server's group gets
    SIGTERM, then SIGKILL after ``grace`` seconds. The same cleanup runs when
    the server exits by itself, so none of its helpers outlive it.
    """
    import signal

    def raise_stop(signum: int, frame: Any) -> None:
        raise _StopError(signum)

    proc = subprocess.Popen(cmd, start_new_session=True, env=env)
    saved = {sig: signal.signal(sig, raise_stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    code = 0
    try:
        code = proc.wait()
    except (KeyboardInterrupt, _StopError):
        print("stopping the MLflow UI ...", file=sys.stderr, flush=True)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        _stop_group(proc, grace)
    return code if code >= 0 else 0


def _stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to every process of ``proc``'s group, SIGKILL after ``grace``; until none is left."""
    import signal
    import time

    def alive() -> bool:
        proc.poll()  # reap the leader: a zombie still counts as a member of its group
        members = group_members(proc.pid)
        if members is not None:
            return bool(members)
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not alive():
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and alive():
            time.sleep(0.1)


# -- compare on run ids ---------------------------------------------------------------
def _run_id_from_prefix(client: Any, prefix: str, uri: str) -> str | None:
    """The one run in the store whose id begins with ``prefix`` (every experiment's);
    None when none does. Two are refused, named."""
    try:
        experiments = [e.experiment_id for e in client.search_experiments()]
        found: list[str] = []
        token = None
        while experiments:
            page = client.search_runs(experiments, max_results=1000, page_token=token)
            found += [r.info.run_id for r in page if r.info.run_id.startswith(prefix)]
            token = page.token
            if not token:
                break
    except Exception as exc:  # noqa: BLE001  # MLflow's own exception types, or the network
        raise _unreachable(uri, exc) from None
    if len(found) == 1:
        return found[0]
    if not found:
        return None
    raise ConfigError(
        f"{len(found)} MLflow runs in {uri} have ids beginning with {prefix}",
        got=", ".join(sorted(found)[:5]) + (" ..." if len(found) > 5 else ""),
        hint="give more of the id (`evalframe runs --wide` shows them whole)",
    )


def fetch_run(ref: str, dest: Path) -> Path | None:
    """Download a logged run's result files into ``dest``; None if ``ref`` is not a run id.

    A run id's first characters (6 or more: ``evalframe runs`` prints 8) stand for the
    one run whose id begins with them, as git takes a commit's; two such runs are
    refused, with both named."""
    match = _RUN_ID.match(ref.strip()) or _RUN_ID_PREFIX.match(ref.strip())
    if match is None:
        return None
    run_id = match.group(1)
    prefix = len(run_id) < 32
    uri = resolve_uri(None)
    if prefix and not _store_exists(uri):
        return None  # a folder's name that happens to be hex (`decade`): compare says
    _check_readable(uri)
    if not _store_exists(uri):
        raise _no_store(uri)
    from evalframe_mlflow.upload import Uploader

    client = Uploader(uri, timeout_seconds=5, retries=1, write=False).client
    if prefix:
        found = _run_id_from_prefix(client, run_id, uri)
        if found is None:
            return None  # no run begins with it: a typo of a folder as likely as of an id
        run_id = found
    try:
        client.get_run(run_id)
    except Exception as exc:  # noqa: BLE001  # MLflow raises its own exception type for a missing run
        if "RESOURCE_DOES_NOT_EXIST" not in str(exc) and "not found" not in str(exc).lower():
            raise _unreachable(uri, exc) from None
        raise ConfigError(
            f"no MLflow run {run_id} in {uri}",
            expected="the id of a run logged by evalframe (see `evalframe runs`)",
            hint="set MLFLOW_TRACKING_URI to the store it was logged to",
        ) from None
    dest.mkdir(parents=True, exist_ok=True)
    try:
        names = {a.path for a in client.list_artifacts(run_id)}
        for needed in ("summary.json", "per_query.jsonl"):
            if needed not in names:
                raise ConfigError(
                    f"MLflow run {run_id} has no {needed} artifact",
                    expected="a run logged by evalframe's mlflow tracker (it uploads every output)",
                    got=", ".join(sorted(names)) or "no artifacts",
                )
            client.download_artifacts(run_id, needed, str(dest))
        if "config.yaml" in names:  # its status criterion leads the comparison, as a folder's
            client.download_artifacts(run_id, "config.yaml", str(dest))
    except EvalframeError:
        raise
    except Exception as exc:  # noqa: BLE001  # artifact store unreachable or files gone
        raise _unreachable(uri, exc) from None
    return dest
