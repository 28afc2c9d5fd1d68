"""Command line: ``evalframe`` / ``python -m evalframe``.

The first word picks a subcommand (``plugins``, ``version``); anything else is
a Hydra run (``+experiment=quickstart retriever.k1=1.2``, ``-m`` for sweeps).
``--help`` is answered here without importing Hydra, mlflow or any plugin so
it stays instant.

Exit codes: 0 passed, 1 a required gate failed, 2 usage/config/data error,
3 a crash (bug) with its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import signal
import sys
from collections.abc import Callable, Sequence

from evalframe import __version__
from evalframe.core.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CRASH,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EvalframeError,
)

__all__ = ["main"]

HELP = """\
evalframe {version}: retrieval evaluation that says whether a change is better, worse, or noise.

usage:
  evalframe [+experiment=NAME] [KEY=VALUE ...]     run an experiment (Hydra overrides)
  evalframe -m [+experiment=NAME] [KEY=A,B ...]    sweep: one job per combination
  evalframe plugins list                           installed plugins, by kind
  evalframe plugins show KIND NAME                 one plugin's settings
  evalframe trec-eval [-q] [-m MEASURE]... QRELS RUN  NIST trec_eval's output, exactly
  evalframe rescore RUN_DIR [KEY=VALUE ...]        re-score a stored run, no retrieval
  evalframe merge SHARD_DIR... --out DIR           one run from its shards (shard=i/n runs)
  evalframe run-config FILE [--out DIR]            run a composed config (DVC's params.yaml)
  evalframe report RUN_DIR [--baseline B]          the run's report.html and summary.md
                                                   (--format md prints the summary)
  evalframe report RUN_DIR... --out DIR            one page of several runs + plot CSVs
  evalframe golden validate|stats|diff|create|sample|review-check ...   curate golden sets
  evalframe golden build +build=NAME [KEY=VALUE ...]   build one with KnowCode's pipeline
                                                   (docs/golden-pipeline.md; `build --help`)
  evalframe cache info|clear                       the retrieval and index cache
  evalframe mine +mine=NAME [KEY=VALUE ...]        mine relevance labels by experiment
                                                   (docs/mining.md; `mine --help`)
  evalframe compare A B [C ...]                    paired comparison (run dirs, baselines,
                                                   MLflow run ids)
  evalframe benefit A B [--golden G]               A/B benefit of a tool per stratum, from two
                                                   arms' attempts (docs/analyses.md)
  evalframe baseline promote RUN_DIR --name NAME   keep a run as a named baseline
  evalframe version
{plugin_commands}
examples:
  evalframe +experiment=quickstart
  evalframe +experiment=quickstart retriever.k1=1.2 depth=20
  evalframe +experiment=quickstart retriever=run_file retriever.path=my.run
  evalframe +experiment=quickstart --cfg job       print the composed config, run nothing

config groups: dataset, corpus, retriever, metrics, gates, tracking, analysis, experiment
  (options are the <group>/*.yaml files in ./conf, evalframe's conf/ and installed plugins)

Hydra's own flags (--cfg, --multirun/-m, --config-dir/-cd, ...) work as usual;
`--hydra-help` shows them.

exit codes: 0 passed · 1 a required gate failed · 2 usage, config or data error · 3 crash (a bug)
"""

SUBCOMMANDS = (
    "baseline",
    "benefit",
    "cache",
    "compare",
    "golden",
    "merge",
    "mine",
    "plugins",
    "report",
    "rescore",
    "run-config",
    "trec-eval",
    "version",
)


def _plugins(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="evalframe plugins", description="installed plugins")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="every plugin with its kind, distribution and description")
    show = sub.add_parser("show", help="one plugin's settings")
    show.add_argument("kind")
    show.add_argument("name")
    args = parser.parse_args(list(argv))

    from evalframe.app.plugins_info import list_plugins, show_plugin

    if args.action == "list":
        print(list_plugins())
    else:
        print(show_plugin(args.kind, args.name))
    return 0


#: Entry-point group through which a distribution adds a subcommand: the name is
#: the command, the value a ``module:function`` taking argv and returning an exit code.
COMMANDS_GROUP = "evalframe.commands"


def plugin_command_names() -> list[str]:
    from evalframe.plugin.dists import entry_points

    return sorted(ep.name for ep in entry_points(COMMANDS_GROUP))


def plugin_command(name: str) -> Callable[[list[str]], int] | None:
    """The subcommand a plugin adds under ``name`` (``evalframe runs`` from evalframe-mlflow).

    An entry point that fails to load (a misspelt ``module:function``, a module
    raising as it is imported) is the distribution's packaging or set-up mistake:
    a PluginError naming it (exit 2), not a crash blamed on evalframe.
    """
    from evalframe.plugin.dists import entry_points
    from evalframe.plugin.registry import load_entry_point

    for ep in entry_points(COMMANDS_GROUP):
        if ep.name == name:
            func = load_entry_point(ep, f"command {name!r}")
            return func  # type: ignore[no-any-return]  # entry points are untyped
    return None


def _summary_line(value: str) -> str:
    """The first docstring line of the function an entry point names, read without importing it.

    ``--help`` must stay instant: importing a plugin's command module could
    pull in its client library (mlflow), so the source is parsed instead.
    """
    import ast
    import importlib.util

    module, _, attr = value.partition(":")
    try:
        spec = importlib.util.find_spec(module.strip())
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(".py"):
            return ""
        with open(origin, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (ImportError, OSError, SyntaxError, ValueError):
        return ""  # a broken plugin still gets its line; running it says what is wrong
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr.strip():
            doc = ast.get_docstring(node) or ""
            return doc.strip().splitlines()[0] if doc.strip() else ""
    return ""


def help_text() -> str:
    """The help, with the subcommands installed plugins add (from their entry points)."""
    from evalframe.plugin.dists import entry_points

    lines = []
    for ep in sorted(entry_points(COMMANDS_GROUP), key=lambda e: e.name):
        dist = ep.dist.name if ep.dist is not None else "a plugin"
        summary = (_summary_line(ep.value) or f"from {dist}; see --help").rstrip(".")
        line = f"{'  evalframe ' + ep.name + ' ...':<51}{summary[:1].lower()}{summary[1:]}"
        lines.append((line if len(line) <= 100 else line[:99] + "…") + "\n")
    return HELP.format(version=__version__, plugin_commands="".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in ("-h", "--help", "help"):
            print(help_text(), end="")
            return 0
        if args and args[0] in ("--version", "version"):
            if any(a in ("-h", "--help") for a in args[1:]):
                print("usage: evalframe version\n\nPrint the installed evalframe's version.")
                return 0
            if args[1:]:  # `version --json` printed the plain line as if understood
                print(
                    f"usage: evalframe version\nevalframe version: error: unrecognized "
                    f"arguments: {' '.join(args[1:])}",
                    file=sys.stderr,
                )
                return 2
            print(f"evalframe {__version__}")
            return 0
        if args and args[0] == "plugins":
            return _plugins(args[1:])
        if args and args[0] == "rescore":
            from evalframe.app.commands import rescore_main

            return rescore_main(args[1:])
        if args and args[0] == "merge":
            from evalframe.app.merge_cmd import main as merge_main

            return merge_main(args[1:])
        if args and args[0] == "cache":
            from evalframe.app.commands import cache_main

            return cache_main(args[1:])
        if args and args[0] == "compare":
            from evalframe.app.compare_cmd import compare_main

            return compare_main(args[1:])
        if args and args[0] == "benefit":
            from evalframe.app.benefit_cmd import main as benefit_main

            return benefit_main(args[1:])
        if args and args[0] == "baseline":
            from evalframe.app.baseline_cmd import main as baseline_main

            return baseline_main(args[1:])
        if args and args[0] == "report":
            from evalframe.report.command import main as report_main

            return report_main(args[1:])
        if args and args[0] == "run-config":
            from evalframe.app.runconfig import main as run_config_main

            return run_config_main(args[1:])
        if args and args[0] == "golden":
            from evalframe.app.golden_cli import main as golden_main

            return golden_main(args[1:])
        if args and args[0] == "mine":
            from evalframe.app.mine_cmd import main as mine_main

            return mine_main(args[1:])
        if args and args[0] == "trec-eval":
            from evalframe.trec_eval.drop_in import main as trec_eval_main

            return trec_eval_main(args[1:])
        if args and not args[0].startswith("-") and "=" not in args[0]:
            command = plugin_command(args[0])
            if command is not None:
                return int(command(args[1:]))
            import difflib

            names = sorted({*SUBCOMMANDS, *plugin_command_names()})
            close = difflib.get_close_matches(args[0], names, n=1)
            print(
                f"error: unknown command {args[0]!r}; commands are {', '.join(names)}, "
                "or give Hydra overrides such as +experiment=quickstart\n"
                + (f"  hint: did you mean {close[0]!r}? " if close else "  hint: ")
                + "`evalframe --help` lists them",
                file=sys.stderr,
            )
            return EXIT_ERROR
        from evalframe.app.hydra_app import run_hydra

        return run_hydra(args)
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C in any command, or while one still imports: no traceback
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `evalframe plugins list | head`: the reader had enough
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # noqa: BLE001  # a crash is reported with its traceback, exit 3
        from evalframe.app.stderr import environment_error, report_crash

        said = environment_error(exc)  # a full disk or a forbidden folder: the user's to fix
        if said is not None:
            print(said, file=sys.stderr)
            return EXIT_ERROR
        if _asked_for_hydras_traceback(exc):
            return EXIT_ERROR
        report_crash()
        return EXIT_CRASH


#: Hydra's errors for a config it could not compose: the user's mistake. Hydra says them
#: in a line itself, and raises them only when HYDRA_FULL_ERROR=1 asks for the traceback.
_HYDRA_CONFIG_ERRORS = frozenset(
    {"ConfigCompositionException", "MissingConfigException", "OverrideParseException"}
)


def _asked_for_hydras_traceback(exc: BaseException) -> bool:
    """Print the traceback HYDRA_FULL_ERROR=1 asked for when ``exc`` is Hydra's error for a
    config it could not compose (exit code 2, a config error, not 3 and "a bug")."""
    import os

    from evalframe.core.secrets import redact_text, redact_traceback

    if os.environ.get("HYDRA_FULL_ERROR") != "1":
        return False
    if type(exc).__module__ != "hydra.errors" or type(exc).__name__ not in _HYDRA_CONFIG_ERRORS:
        return False
    print(redact_traceback(exc), end="", file=sys.stderr)  # an override may carry a key
    print(
        "error: Hydra could not compose the config: "
        f"{redact_text(str(exc).strip().splitlines()[0])} "
        "(above is the traceback HYDRA_FULL_ERROR=1 asks for)",
        file=sys.stderr,
    )
    return True


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the reader of the pipe is gone, and the interpreter's
    flush at exit would otherwise fail again with "Exception ignored ... BrokenPipeError"."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured, closed): nothing to flush
        pass


def _exit_now(code: int, signum: int, frame: object) -> None:
    """Ctrl-C after the command's result: the process ends now, with the command's code."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a stream closed in the teardown
            stream.flush()
    os._exit(code)


def entry() -> None:
    """Console-script entry point."""
    if sys.argv[1:2] and sys.argv[1] in ("rescore", "merge", "report"):
        # one command scope (core.gcpause.long_lived), then the process ends; a sweep's
        # jobs, several scopes in one process, still give theirs back one by one
        from evalframe.core.gcpause import process_ends_with_command

        process_ends_with_command()
    code = main()
    # The command has said its result: a Ctrl-C from here (the interpreter's teardown,
    # an exit hook still uploading) printed "Exception ignored in ... KeyboardInterrupt"
    # and exited with the code all the same. It now ends the process at once, with it.
    signal.signal(signal.SIGINT, functools.partial(_exit_now, code))
    # The interpreter's last collections walk every object still alive (the modules,
    # pydantic's schemas, what a command keeps): 0.1 s at the end of a 10k rescore,
    # for a process that is ending. Frozen, they are not walked. (An object in a
    # reference cycle then skips its __del__ at exit, which Python never promises;
    # atexit functions still run and non-daemon threads are still joined.)
    gc.freeze()
    sys.exit(code)
