"""``evalframe merge SHARD_DIR... --out DIR``: one evaluation from the folders of its shards.

The shards' own config (``config.yaml``, identical in every shard) is the
config of the merged run, with ``shard`` unset and ``output.dir`` set to
``--out``; ``KEY=VALUE`` changes it as on ``rescore`` (``tracking=none``).
See :mod:`evalframe.pipeline.shard` for what is checked and why the numbers
are those of an unsharded run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from evalframe.core.gcpause import long_lived

__all__ = ["main"]


# the command's scope (core.gcpause): what it loads stays off the collector's passes
@long_lived()
def main(argv: Sequence[str]) -> int:
    """Combine the shards of one evaluation and score, gate, compare and track it once."""
    parser = argparse.ArgumentParser(
        prog="evalframe merge",
        description="Combine the shard folders of one evaluation (runs with shard=i/n) into one "
        "run: aggregation, CIs, gates, the baseline comparison, the report and tracking run "
        "once, on the whole, exactly as an unsharded run. Shards from different configs, "
        "golden sets or code are refused, and so are missing or repeated shards.",
    )
    parser.add_argument(
        "items",
        nargs="+",
        metavar="SHARD_DIR|KEY=VALUE",
        help="every shard folder (0/n .. n-1/n), and KEY=VALUE changes to their config "
        "(tracking=none), as on rescore",
    )
    parser.add_argument("--out", type=Path, required=True, help="the merged run's folder")
    # options may come between the positionals (... --out DIR ...)
    args = parser.parse_intermixed_args(list(argv))
    overrides = [i for i in args.items if "=" in i and not Path(i).is_dir()]
    folders = [Path(i) for i in args.items if i not in overrides]

    from evalframe.app.runconfig import load_config
    from evalframe.assess.runfolder import RunFolder
    from evalframe.pipeline.config import validate_experiment
    from evalframe.pipeline.shard import check_shards, merge_shards, read_shards
    from evalframe.report.page import RunPage
    from evalframe.report.terminal import TerminalReport

    shards = read_shards(folders)
    check_shards(shards)  # before loading anything: a refusal costs nothing
    first = min(shards, key=lambda s: s.shard.index)
    raw = load_config(
        RunFolder(first.path).require(RunFolder.CONFIG, "shard config"),
        [*overrides, "shard=null"],
        args.out,
        what="shard config",
        hint="write changes as key=value or group=option, e.g. tracking=none",
        stored_rankings=True,
    )
    exp = validate_experiment(raw)
    # the page and summary.md too: the merged folder is a run folder like any other
    result = merge_shards(exp, shards, [RunPage(), TerminalReport()], metadata={"merged": True})
    return result.exit_code
