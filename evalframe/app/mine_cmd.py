"""``evalframe mine``: Monte Carlo relevance mining, composed with Hydra like a run.

``evalframe mine +mine=mine_demo [KEY=VALUE ...]`` composes ``conf/mining.yaml``
with ``conf/mine/<name>.yaml`` on the same search path as a run (evalframe's
conf/, ./conf, installed plugins' conf folders), so overrides,
``hydra.run.dir=...``, ``--cfg job`` and ``-m`` work as they do for runs.

``evalframe mine rejudge FILE --threshold T`` re-judges an existing
retrieval_dataset.yaml and, with ``--run RUN_DIR``, shows how that stored
run's gates come out under the old and the new labels.

Everything of the command lives in this module; cli.py only dispatches to
:func:`main`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.app.composed import run_composed
from evalframe.app.hydra_app import (
    EXIT_CRASH,
    _register_resolvers,
    config_search_path,
    drop_stub_folder,
    group_options,
)
from evalframe.app.hydra_errors import plain_config
from evalframe.app.stderr import report_crash
from evalframe.core.argtypes import number
from evalframe.core.errors import EXIT_ERROR, EXIT_OK, ConfigError, EvalframeError

__all__ = ["main"]

#: The primary config of a mining run, beside config.yaml in evalframe's conf/.
CONFIG_NAME = "mining"
GROUPS = ("corpus", "solver", "validator", "mine")

HELP = """\
usage:
  evalframe mine +mine=NAME [KEY=VALUE ...]      mine relevance labels (Hydra overrides)
  evalframe mine +mine=NAME --cfg job            print the composed config, run nothing
  evalframe mine rejudge FILE --threshold T [--out NEW.yaml] [--run RUN_DIR]
                                                 re-judge a retrieval_dataset.yaml

examples:
  evalframe mine +mine=mine_demo
  evalframe mine +mine=mine_demo trials.n=400 statistics.threshold=0.2 hydra.run.dir=out/m
  evalframe mine +mine=mine_demo solver=command 'solver.command=[python,agent.py]'

config groups: mine, corpus, solver, validator (conf/<group>/*.yaml on the search path)
docs: docs/mining.md · exit codes: 0 done · 2 usage, config or data error · 3 crash
"""


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if args and args[0] in ("-h", "--help", "help"):
        print(HELP, end="")
        return EXIT_OK
    if args and args[0] == "rejudge":
        return rejudge_main(args[1:])
    return run_mining(args)


# -- mining through Hydra -------------------------------------------------------


def run_mining(argv: Sequence[str], prog: str = "evalframe mine") -> int:
    """Compose the mining config with Hydra and mine; return the exit code."""
    return run_composed(argv, prog=prog, config_name=CONFIG_NAME, groups=GROUPS, job=_mine_job)


def _mine_job(cfg: Any) -> int:
    from evalframe.mine.config import validate_mining
    from evalframe.mine.engine import mine, prepare, tqdm_progress
    from evalframe.mine.output import render_report, write_outputs

    try:
        if not cfg.get("benchmarks"):
            options = group_options("mine", config_search_path())
            raise ConfigError(
                "no benchmark to mine",
                key="benchmarks",
                expected="a mining experiment that lists benchmarks and their tasks files",
                hint=f"pick one with +mine=NAME (available: {', '.join(options) or 'none'}), "
                "e.g. evalframe mine +mine=mine_demo; or write conf/mine/<name>.yaml",
            )
        raw = plain_config(
            cfg,
            "resolve the mining config",
            "set it on the command line (key=value) or in conf/mine/<name>.yaml, "
            "e.g. +mine=mine_demo",
        )
        config = validate_mining(raw)
        prepared = prepare(config)
        sizes = sorted({len(p.pool) for p in prepared.pairs})
        print(
            f"mining {config.name}: {len(prepared.pairs)} tasks, "
            f"{'-'.join(map(str, sizes[:: max(1, len(sizes) - 1)]))} candidates each, "
            f"{prepared.trials} trials per task ({config.solver.spec.name} solver, "
            f"{config.validator.spec.name} validator)"
        )
        for line in prepared.budget.lines():
            print(line)
        sys.stdout.flush()
        result = mine(
            config, prepared=prepared, progress=tqdm_progress() if config.progress else None
        )
        paths = write_outputs(result, config)
        print()
        print(render_report(result, config, paths["dataset"]))
        return EXIT_OK
    except EvalframeError as exc:
        # refused before anything was written: no folder of .hydra/ and an empty log
        # left behind as if it held a mining run (a sweep's job folders stay)
        drop_stub_folder()
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        drop_stub_folder()
        print("interrupted: answers already given are cached; re-run to resume", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001  # a crash is reported with its traceback, not hidden
        report_crash()
        return EXIT_CRASH


# -- rejudge ----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evalframe mine rejudge",
        description="Re-judge empirical_relevance in a retrieval_dataset.yaml at another "
        "threshold (full statistics when the file has evalframe's counts, else ADK's "
        "delta_p > threshold), and show which labels and gate verdicts change.",
    )
    p.add_argument("path", type=Path, help="the retrieval_dataset.yaml")
    p.add_argument("--threshold", type=number(), required=True, help="the new Δp threshold")
    p.add_argument(
        "--confidence",
        type=number(0, 1, above=True, below=True),
        help="the new confidence (default: the file's)",
    )
    p.add_argument("--correction", choices=("holm", "bh", "none"), help="default: the file's")
    p.add_argument("--out", type=Path, help="write the re-judged dataset here")
    p.add_argument(
        "--run",
        type=Path,
        help="a stored run scored on this dataset: show its gates before and after",
    )
    return p


def _check_out(out: Path | None, source: Path) -> None:
    """``--out``: a file to write, not the input and not a folder (checked before any work)."""
    if out is None:
        return
    if out.resolve() == source.resolve():
        raise ConfigError(
            "--out is the input file",
            hint="write the re-judged dataset to a new file; keep the original for comparison",
        )
    from evalframe.app.outfolder import refuse_a_folder

    refuse_a_folder(out, expected="the path of the re-judged dataset file", name=source.name)
    parent = next((q for q in out.parents if q.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ConfigError(
            f"{out} cannot be written: {parent} is a file, not a folder",
            key="--out",
            hint="name a file in a folder (a missing folder is created)",
        )


def rejudge_main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    if not 0 <= args.threshold < 1:
        raise ConfigError("--threshold must be in [0, 1)", got=str(args.threshold))
    if args.confidence is not None and not 0.5 < args.confidence < 1:
        raise ConfigError("--confidence must be in (0.5, 1)", got=str(args.confidence))
    _check_out(args.out, args.path)
    from evalframe.core.io import atomic_write
    from evalframe.mine.output import dump_yaml
    from evalframe.mine.rejudge import read_dataset, rejudge

    data = read_dataset(args.path)
    # the run is checked before anything is written or printed: a wrong --run leaves no file
    run_cfg = _run_config(args.run, args.path) if args.run is not None else None
    new, changes = rejudge(
        data,
        threshold=args.threshold,
        confidence=args.confidence,
        correction=args.correction,
        source=args.path,
    )
    text = dump_yaml(new)
    gates: tuple[list[Any], list[Any]] | None = None
    if run_cfg is not None:
        with tempfile.TemporaryDirectory(prefix="evalframe-rejudge-") as tmp:
            rejudged = atomic_write(Path(tmp) / args.path.name, text)
            gates = (
                _gates(args.run, run_cfg, args.path),
                _gates(args.run, run_cfg, rejudged),
            )
    moved = [c for c in changes if c.before != c.after]
    print(f"re-judged {args.path} at threshold {args.threshold:g}: {len(moved)} label(s) change")
    for c in changes:
        dp = "   n/a" if c.delta_p is None else f"{c.delta_p:+.3f}"
        note = f"  ({c.note})" if c.note else ""
        print(f"  {c.pair:<24} {c.fqn:<40} Δp {dp}  {c.before} -> {c.after}{note}")
    if args.out is not None:
        atomic_write(args.out, text)
        print(f"wrote {args.out}")
    if gates is not None:
        _show_gates(args.run, *gates)
    return EXIT_OK


def _run_config(run_dir: Path, dataset: Path) -> Any:
    """The stored config of a run scored on an ADK dataset, or an error saying why not."""
    import yaml
    from omegaconf import DictConfig, OmegaConf

    from evalframe.assess.runfolder import RunFolder
    from evalframe.core.reader import read_text, yaml_error

    _register_resolvers()
    path = RunFolder(run_dir).require(RunFolder.CONFIG, "stored run config")
    try:
        cfg = OmegaConf.create(read_text(path, what="stored run config"))
    except yaml.YAMLError as exc:
        raise yaml_error(
            exc, path, what="the stored run config", hint="give --run a run folder evalframe wrote"
        ) from None
    stored = cfg.get("dataset") if isinstance(cfg, DictConfig) else None
    name = stored.get("name") if isinstance(stored, DictConfig) else None
    if name != "adk":
        where = stored.get("path") if isinstance(stored, DictConfig) else None
        scored = f"dataset {name or '(none)'}" + (f" ({where})" if where else "")
        raise ConfigError(
            f"{run_dir} was scored on {scored}, not on an ADK retrieval dataset such as {dataset}",
            key="--run",
            expected="a run of dataset=adk, e.g. of +experiment=adk",
            hint=f"score a run on this file first: python -m evalframe +experiment=adk "
            f"dataset.path={dataset} corpus.path={dataset}, and give its folder to --run "
            "(or leave --run out)",
        )
    return cfg


def _gates(run_dir: Path, stored: Any, dataset: Path) -> list[Any]:
    """The gates of the run in ``run_dir`` (its config ``stored``) scored on ``dataset``."""
    from evalframe.assess.runfolder import RunFolder
    from evalframe.pipeline.config import validate_experiment
    from evalframe.pipeline.run import load_golden, score_and_report
    from evalframe.plugin.hooks import HookRelay, RunContext

    cfg = stored.copy()
    with tempfile.TemporaryDirectory(prefix="evalframe-rejudge-run-") as out:
        cfg.dataset.path = str(dataset)
        cfg.output.dir = out
        cfg.tracking = {"name": "none"}
        raw = plain_config(cfg, "re-read the stored run's config", "check RUN_DIR/config.yaml")
        exp = validate_experiment(raw)
        golden, _ = load_golden(exp)
        context = RunContext(
            experiment=exp.name, output_dir=exp.output_dir, config=exp.public_config
        )
        run = RunFolder(run_dir).run()
        result = score_and_report(exp, golden, run, HookRelay.build(()), context, [])
        return list(result.gates)


def _show_gates(run_dir: Path, old: list[Any], new: list[Any]) -> None:
    if not old:
        print(f"the run in {run_dir} has no gates to compare")
        return
    print(f"gates of {run_dir}, on the old labels and the new:")

    def show(g: Any) -> str:
        value = "" if g.value is None else f" {g.value:.3f}"
        return f"{'pass' if g.passed else 'FAIL'}{value}"

    for g_old, g_new in zip(old, new, strict=True):
        flag = "  <- changed" if g_old.passed != g_new.passed else ""
        print(f"  {g_old.name:<28} {show(g_old):<14} -> {show(g_new)}{flag}")
