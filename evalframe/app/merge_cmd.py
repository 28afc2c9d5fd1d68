"""``evalframe merge SHARD_DIR... --out DIR``: one evaluation from the folders of its shards.

The shards' own config (``config.yaml``, identical in every shard) is the
config of the merged run, with ``shard`` unset and ``output.dir`` set to
``--out``; ``KEY=VALUE`` changes it as on ``rescore`` (``tracking=none``).
See :mod:`evalframe.pipeline.shard` for what is checked and why the numbers
are those of an unsharded run.

Every check comes before anything is written or tracked: a refused merge
leaves ``--out`` as it was and no run in the tracker. ``--out`` may be new or
empty, or hold an earlier run (a previous merge), which the merged run
replaces whole (said in one line, as ``rescore`` says it re-scores in place);
a folder holding anything else is refused rather than mixed with.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from evalframe.core.gcpause import long_lived
from evalframe.core.messages import kept

__all__ = ["main"]


# the command's scope (core.gcpause): what it loads stays off the collector's passes;
# and what it warns about, from the config on, is kept for summary.json and the page
@long_lived()
@kept()
def main(argv: Sequence[str]) -> int:
    """Combine the shards of one evaluation and score, gate, compare and track it once."""
    parser = argparse.ArgumentParser(
        prog="evalframe merge",
        description="Combine the shard folders of one evaluation (runs with shard=i/n) into one "
        "run: aggregation, CIs, gates, the baseline comparison, the report and tracking run "
        "once, on the whole, exactly as an unsharded run. Shards from different configs, "
        "golden sets or code are refused, and so are missing or repeated shards; a refused "
        "merge writes and tracks nothing.",
    )
    parser.add_argument(
        "items",
        nargs="+",
        metavar="SHARD_DIR|KEY=VALUE",
        help="every shard folder (0/n .. n-1/n), and KEY=VALUE changes to their config "
        "(tracking=none), as on rescore",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the merged run's folder: new, empty, or an earlier run's folder, which is "
        "replaced (a folder holding other files is refused)",
    )
    # options may come between the positionals (... --out DIR ...)
    args = parser.parse_intermixed_args(list(argv))
    overrides = [i for i in args.items if "=" in i and not Path(i).is_dir()]
    folders = [Path(i) for i in args.items if i not in overrides]

    from evalframe.app.outfolder import out_holds_a_run, replaced
    from evalframe.app.runconfig import load_config
    from evalframe.assess.runfolder import RunFolder
    from evalframe.core.io import replacing_folder
    from evalframe.pipeline.config import validate_experiment
    from evalframe.pipeline.shard import check_merge, check_shards, read_shards, score_merge
    from evalframe.report.page import RunPage
    from evalframe.report.terminal import TerminalReport

    shards = read_shards(folders)
    check_shards(shards)  # before loading anything: a refusal costs nothing
    out: Path = args.out
    replace = out_holds_a_run(
        out,
        [(s.path, f"the folder of shard {s.shard}, one of those being merged") for s in shards],
        command="merge",
        new="merged run",
        made_from="rankings",
        suggest="merged",
    )
    first = min(shards, key=lambda s: s.shard.index)
    raw = load_config(
        RunFolder(first.path).require(RunFolder.CONFIG, "shard config"),
        [*overrides, "shard=null"],
        out,
        what="shard config",
        hint="write changes as key=value or group=option, e.g. tracking=none",
        stored_rankings=True,
        # the merge is the run: tracked as a run is (EVALFRAME_TRACKING, tracking=...), not
        # as its shards were (a sharded sweep tracks none of its shards)
        fresh_tracking=True,
    )
    exp = validate_experiment(raw)
    # the golden set and corpus against the shards, each shard's slice: no tracker yet
    merge = check_merge(exp, shards)
    if replace:
        print(
            f"note: replacing {replaced(out)} in {out} with the merged run: none of its files are "
            "kept unless the merge fails (--out ANOTHER_DIR keeps it)",
            file=sys.stderr,
        )
    # the page and summary.md too: the merged folder is a run folder like any other.
    # An earlier run is put back if the merge fails before its end (an exporter, Ctrl-C).
    with replacing_folder(out) if replace else nullcontext():
        result = score_merge(merge, [RunPage(), TerminalReport()], metadata={"merged": True})
    return result.exit_code
