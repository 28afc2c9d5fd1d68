"""DVC's Hydra composition (``dvc exp run -S``) made to see what evalframe sees.

DVC composes ``conf/dvc_exp.yaml`` into ``params.yaml`` with Hydra's compose API
and nothing else: it knows only ``conf/``, registers no resolver, and resolves
every interpolation before it writes the file. The Hydra plugin in
``.dvc/plugins/hydra_plugins/`` (``hydra.plugins_path`` in ``.dvc/config``)
imports this module, which

- appends evalframe's config search path (``./conf`` and every installed
  plugin's config folder, see :func:`evalframe.app.hydra_app.config_search_path`)
  to the search path of that composition, so ``retriever=bm25`` resolves as it
  does for ``python -m evalframe``;
- registers ``${ef.data:...}``, giving a path relative to the repository when
  the data lies inside it, so the committed ``params.yaml`` holds no absolute
  path of one machine;
- registers ``${ef.no_experiment:}``, the value of ``experiment`` in
  ``conf/dvc_exp.yaml`` that an experiment file replaces: resolved, it stops a
  composition that picks no experiment (a plain ``dvc exp run``) before DVC
  writes ``params.yaml`` or runs a stage, which would replace the file by one
  naming no golden set and delete the ``exp`` stage's results;
- replaces ``${oc.env:...}`` by a resolver that stops the composition: DVC
  would write the variable's value into ``params.yaml``, which is committed
  (a credential in clear, and another machine's value on the next checkout).

``python -m evalframe`` never loads it: the folder is not on ``sys.path``.
"""

from __future__ import annotations

import os
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

__all__ = [
    "FROM_ENVIRONMENT",
    "NO_EXPERIMENT",
    "EvalframeSearchPath",
    "data_path",
    "env_refused",
    "register_resolvers",
]

_FILE = "file://"


def data_path(rel: str, repo_root: Path | None) -> str:
    """``${ef.data:rel}`` for a composed file: repo-relative when the repository has it.

    In a checkout (or clone) of evalframe the data is ``evalframe/data/<rel>`` of
    that repository, which is also what its pipeline's stages depend on;
    anywhere else it is the installed package's file, by absolute path.
    """
    package = Path(__file__).resolve().parents[1]  # evalframe/ (this is evalframe/app/...)
    if repo_root is not None:
        root = repo_root.resolve()
        for candidate in (package / "data" / rel, root / package.name / "data" / rel):
            if candidate.is_file() or candidate.is_dir():
                try:
                    return candidate.relative_to(root).as_posix()
                except ValueError:
                    continue
    return str(package / "data" / rel)


#: What a composition that picks no experiment says (DVC prints it after "ERROR:").
NO_EXPERIMENT = (
    "`dvc exp run` composes params.yaml from conf/dvc_exp.yaml, and this composition picks "
    "no experiment, so it would name no golden set: add -S '+experiment=NAME' (an "
    "experiment of conf/experiment/, which sets `experiment: NAME`). Nothing was changed: "
    "params.yaml and the results are as they were"
)


def no_experiment() -> str:
    """``${ef.no_experiment:}``: reached only when no experiment file set ``experiment``."""
    raise ValueError(NO_EXPERIMENT)


#: What a composition that reads an environment variable says ({name}: the variable).
FROM_ENVIRONMENT = (
    "`dvc exp run` writes params.yaml with every interpolation resolved, so "
    "${{oc.env:{name}}} would write this machine's value of {name} into params.yaml, which "
    "Git keeps (and each experiment's commit): a credential would be stored in clear, and "
    "another checkout would run with this machine's value. Nothing was changed: params.yaml "
    "and the results are as they were. Give a plugin's credential by the variable's name "
    "(its *_env or headers_from_env setting, read when the run starts: docs/security.md), "
    "and any other value with -S key=value"
)


def env_refused(key: str, default: object = None) -> str:
    """``${oc.env:KEY}`` in DVC's composition: stops it, naming the variable."""
    raise ValueError(FROM_ENVIRONMENT.format(name=key))


def register_resolvers(repo_root: Path | None = None) -> None:
    """Register ``ef.data`` and ``ef.no_experiment`` (unless already done, in this process),
    and put :func:`env_refused` in ``oc.env``'s place: only DVC's process loads this."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("ef.data"):
        OmegaConf.register_new_resolver("ef.data", lambda rel: data_path(str(rel), repo_root))
    if not OmegaConf.has_resolver("ef.no_experiment"):
        OmegaConf.register_new_resolver("ef.no_experiment", no_experiment)
    OmegaConf.register_new_resolver("oc.env", env_refused, replace=True, use_cache=False)


class EvalframeSearchPath(SearchPathPlugin):
    """Append evalframe's config folders that the composition does not search yet."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from evalframe.app.hydra_app import config_search_path

        present = {
            os.path.realpath(e.path[len(_FILE) :])
            for e in search_path.get_path()
            if e.path is not None and e.path.startswith(_FILE)
        }
        for folder in config_search_path():
            if os.path.realpath(folder) not in present:
                search_path.append(provider="evalframe", path=f"{_FILE}{folder}")
                present.add(os.path.realpath(folder))
