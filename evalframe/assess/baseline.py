"""Baselines: a finished run kept under a name, for later runs to be compared with.

``evalframe baseline promote RUN_DIR --name NAME`` copies the run's
per-query results, aggregates, summary (with the golden set's content hash and
the metric policies) and config into ``baselines/<name>/``. That folder is
small, plain text and stable, which is what DVC tracks. A run with
``baseline=<name>`` loads it, refuses it if it was computed on another golden
set or with other metric policies, and hands the per-query vectors to the
regression gates and the comparison.

``baseline=path/to/results.json`` reads the results file B.O.B's ``eval run``
saves instead (:mod:`evalframe.assess.bob_results`): a team keeps its history.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from evalframe.assess.bob_results import BOB_POLICIES, is_bob_results, read_bob_results
from evalframe.assess.runfolder import RunData, RunFolder
from evalframe.core.errors import ConfigError, DataError
from evalframe.core.reader import dvc_placeholder, require_file
from evalframe.core.types import GoldenSet
from evalframe.metrics import Policies, policy_differences, same_policies

__all__ = [
    "FILES",
    "NAME",
    "Baseline",
    "check_name",
    "load_baseline",
    "promote",
    "require_versioning",
    "version_commands",
    "version_with_dvc",
]

#: What a baseline keeps of a run.
FILES = RunFolder.BASELINE_FILES


@dataclass(frozen=True)
class Baseline:
    """A stored run's per-query values, keyed by query id and canonical metric name."""

    name: str
    path: Path
    per_query: dict[str, dict[str, float]]
    golden_hash: str | None
    policies: dict[str, Any]
    metrics: tuple[str, ...]
    #: The whole stored run (rankings, slices), for the paired comparison.
    data: RunData | None = None
    #: ``evalframe`` (a run or promoted folder) or ``bob`` (B.O.B's results JSON).
    format: Literal["evalframe", "bob"] = "evalframe"

    def check(self, golden: GoldenSet, policies: Policies, *, allow_mismatch: bool) -> None:
        """Refuse a baseline scored on other queries or under other policies.

        An evalframe baseline must match the golden set's content hash. B.O.B's
        results carry no hash, so every query of this run must be among the
        baseline's (a one-domain run against the whole set's results is
        compared on its own queries), and the run must score with B.O.B's
        conventions. ``allow_mismatch`` compares the shared queries anyway.
        """
        if allow_mismatch:
            return
        hint = "or set compare.allow_mismatch=true to compare the shared queries"
        if self.format == "bob":
            unknown = [q.id for q in golden if q.id not in self.per_query]
            if unknown:
                raise ConfigError(
                    f"baseline {self.name!r} has no results for {len(unknown)} of this run's "
                    f"{len(golden)} questions (ids {', '.join(unknown[:5])}"
                    f"{' …' if len(unknown) > 5 else ''})",
                    key="baseline",
                    hint="save new B.O.B results on this golden set, " + hint,
                )
            stated = policies.model_dump()
            wrong = {k: v for k, v in BOB_POLICIES.items() if stated.get(k) != v}
            if wrong:
                raise ConfigError(
                    f"baseline {self.name!r} holds B.O.B's numbers, which assume "
                    + ", ".join(f"{k}={v}" for k, v in BOB_POLICIES.items())
                    + f"; this run uses {', '.join(f'{k}={stated.get(k)}' for k in wrong)}",
                    key="baseline",
                    hint="score with metrics=bob (B.O.B's policies), " + hint,
                )
            return
        if self.golden_hash != golden.content_hash:
            raise ConfigError(
                f"baseline {self.name!r} was scored on another golden set "
                f"({self.golden_hash}, this run: {golden.content_hash})",
                key="baseline",
                hint="promote a new baseline on this golden set, " + hint,
            )
        if not same_policies(self.policies, policies):
            raise ConfigError(
                f"baseline {self.name!r} used other metric policies (baseline vs this run: "
                f"{'; '.join(policy_differences(self.policies, policies))})",
                key="baseline",
                hint="use the same metrics.policies, " + hint,
            )

    def vector(self, metric: str, query_ids: tuple[str, ...]) -> np.ndarray:
        """The baseline's values for ``query_ids`` (NaN where it has none)."""
        out = np.full(len(query_ids), np.nan)
        for i, qid in enumerate(query_ids):
            value = self.per_query.get(qid, {}).get(metric)
            if value is not None:
                out[i] = value
        return out


#: What a baseline's name may be: one word that is a plain folder name under the
#: baselines folder (no separator, not ``.`` or ``..``, not hidden like the swap's
#: temporary folders, no space a shell would split).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_name(name: str, key: str = "--name") -> str:
    """``name`` when it is a baseline name (:data:`NAME`), else a :class:`ConfigError`
    naming ``key`` (the option or config key it came from)."""
    if NAME.fullmatch(name):
        return name
    suggestion = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("._-")
    raise ConfigError(
        "a baseline name must be one word: letters, digits, '.', '_' or '-', starting with "
        "a letter or digit (it names a folder under the baselines folder)",
        expected="a name such as main or bm25-2024.06",
        key=key,
        got=repr(name),
        hint=f"for example {key} {suggestion}"
        if suggestion and NAME.fullmatch(suggestion)
        else f"for example {key} main",
    )


def _resolve(name_or_path: str, root: Path, key: str = "baseline") -> Path:
    """The folder (or B.O.B results file) ``name_or_path`` names; ``key`` is the
    argument that gave it, named by the error (``runs[1]`` for a run ``evalframe.compare``
    was given, which is not the baseline)."""
    what = "baseline" if key == "baseline" else "run"
    candidate = Path(name_or_path)
    if RunFolder.is_run(candidate) or is_bob_results(candidate):
        return candidate
    named = root / name_or_path
    if RunFolder.is_run(named):
        return named
    if candidate.is_dir():  # a folder that is not a run: say which file it lacks
        _not_a_run(candidate, name_or_path, root)
    if (os.sep in name_or_path or name_or_path.endswith(".json")) and not candidate.exists():
        tracked = dvc_placeholder(candidate)
        raise ConfigError(
            f"{what} not found: {name_or_path} (no such file or folder)",
            key=key,
            expected="a run or baseline folder, a results JSON B.O.B saved, or a baseline "
            f"name in {root}",
            hint=f"it is tracked by DVC ({tracked}): fetch it with `dvc pull {tracked}`"
            if tracked is not None
            else f"check the path (relative paths are read from {Path.cwd()})",
        )
    available = (
        sorted(p.name for p in root.iterdir() if RunFolder.is_run(p)) if (root.is_dir()) else []
    )
    tracked = dvc_placeholder(named)
    hint = (
        f"it is tracked by DVC ({tracked}): fetch it with `dvc pull {tracked}`"
        if tracked is not None
        else "promote one with `evalframe baseline promote RUN_DIR --name NAME`, or give a "
        "run directory or the results JSON B.O.B saved"
    )
    raise ConfigError(
        f"no baseline named {name_or_path!r} in {root}"
        + ("" if key == "baseline" else ", and no run folder at that path"),
        key=key,
        expected=f"one of: {', '.join(available)}" if available else "a promoted baseline",
        hint=hint,
    )


def _not_a_run(folder: Path, given: str, root: Path) -> None:
    """Refuse ``folder``, which has no ``summary.json``, naming that file (a folder of
    runs, such as ``outputs/quickstart``: naming its newest run)."""
    try:
        RunFolder(folder).require(RunFolder.SUMMARY, "run summary")
    except DataError as exc:
        if exc.got is not None:  # a folder of runs: the error names the one to give
            raise
        # a bare name may have meant a baseline: there is none by that name either
        also = "" if os.sep in given else f" (nor is there a baseline named {given!r} in {root})"
        raise DataError(
            f"{folder} is not a run folder: it has no {RunFolder.SUMMARY}{also}",
            path=folder / RunFolder.SUMMARY,
            expected="a finished run's folder, where a run writes summary.json last",
            hint="give a folder a run finished (it printed 'Saved results to:'), or restore "
            f"{RunFolder.SUMMARY} from where the folder came (a copy, `dvc pull`, git)",
        ) from None


def load_baseline(
    name_or_path: str, root: Path = Path("baselines"), *, key: str = "baseline"
) -> Baseline:
    """A baseline by name (under ``root``), by the path of any run or baseline folder, or
    by the path of a results file saved by B.O.B. ``key``: the argument that named it,
    as an error names it."""
    folder = _resolve(name_or_path, root, key)
    bob = is_bob_results(folder)
    data = read_bob_results(folder) if bob else RunFolder(folder).data()
    per_query: dict[str, dict[str, float]] = {qid: {} for qid in data.query_ids}
    for metric, values in data.values.items():
        for qid, value in values.items():
            per_query[qid][metric] = value
    return Baseline(
        name=data.name if bob else folder.name,
        path=folder,
        per_query=per_query,
        golden_hash=data.golden_hash,
        policies=data.policies,
        metrics=data.metrics,
        data=data,
        format="bob" if bob else "evalframe",
    )


def promote(run_dir: Path, name: str, root: Path = Path("baselines")) -> Path:
    """Copy a run's results into ``root/name`` atomically (a whole folder swap).
    ``name`` must be a baseline name (:func:`check_name`)."""
    check_name(name)
    for file in FILES:
        require_file(run_dir / file, what=f"run output {file}")
    _require_every_record(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    # mkdtemp's folder is the owner's alone (0700): a baseline is read by the team, so it
    # gets the mode any folder made here gets (the umask's)
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)
    try:
        for file in FILES:
            shutil.copy2(run_dir / file, tmp / file)
        for file in RunFolder.BASELINE_OPTIONAL:  # the corpus manifest, for the drift view
            if (run_dir / file).is_file():
                shutil.copy2(run_dir / file, tmp / file)
        target = root / name
        if target.exists():
            old = root / f".{name}.old"
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root / name


def _require_every_record(run_dir: Path) -> None:
    """A baseline is every later run's reference: one promoted from a folder that lost
    per-query records would compare those queries as missing, run after run. The
    check ``rescore`` makes (:meth:`RunFolder.check_all_records`)."""
    with open(RunFolder(run_dir).file(RunFolder.PER_QUERY), "rb") as handle:
        RunFolder(run_dir).check_all_records(sum(1 for line in handle if line.strip()))


def _dvc_executable() -> str:
    """``dvc`` beside this interpreter (the virtualenv's), else the one on ``PATH``."""
    beside = Path(sys.executable).parent / "dvc"
    if beside.is_file():
        return str(beside)
    found = shutil.which("dvc")
    if found is None:
        raise ConfigError(
            "the dvc command was not found",
            key="--commit",
            expected=f"dvc installed beside {sys.executable} or on PATH",
            hint="install evalframe with `make install` (dvc is a dependency), or version the "
            "baseline yourself with the commands printed without --commit",
        )
    return found


def version_commands(target: Path, name: str) -> list[list[str]]:
    """The ``dvc add`` and ``git`` commands that record a promoted baseline."""
    dvc_file = target.parent / f"{target.name}.dvc"
    ignore = target.parent / ".gitignore"
    return [
        ["dvc", "add", str(target)],
        ["git", "add", str(dvc_file), str(ignore)],
        ["git", "commit", "-m", f"baseline {name}", "--", str(dvc_file), str(ignore)],
    ]


def require_versioning(root: Path) -> None:
    """Refuse ``--commit`` where the baselines folder ``root`` (made or not) is not inside
    a Git repository with DVC: checked before the run is copied, so that a refusal
    replaces no baseline (it was checked after, with the old baseline gone)."""
    from evalframe.golden.dvcinfo import dvc_root

    start = Path(root).resolve()
    existing = next((p for p in (start, *start.parents) if p.exists()), start)
    if dvc_root(existing) is None:
        raise ConfigError(
            f"{root} is not inside a DVC repository",
            key="--commit",
            hint="run `dvc init` in your Git repository first (docs/dvc.md), or promote "
            "without --commit",
        )
    if not any((p / ".git").exists() for p in (existing, *existing.parents)):
        raise ConfigError(
            f"{root} is not inside a Git repository, so the baseline's .dvc file cannot be "
            "committed",
            key="--commit",
            hint="promote inside your project's Git repository, or without --commit",
        )


def version_with_dvc(target: Path, name: str) -> list[str]:
    """Run :func:`version_commands`; return what ran. Commits only the baseline's files."""
    require_versioning(target.parent)
    ran = []
    for command in version_commands(target, name):
        argv = [_dvc_executable(), *command[1:]] if command[0] == "dvc" else command
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        shown = shlex.join(command)
        if result.returncode != 0:
            output = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise ConfigError(
                f"`{shown}` failed (exit {result.returncode}) after the baseline was copied "
                f"to {target}",
                got=output[-1] if output else None,
                hint="fix the cause and run the remaining commands by hand: "
                + " && ".join(shlex.join(c) for c in version_commands(target, name)),
            )
        ran.append(shown)
    return ran
