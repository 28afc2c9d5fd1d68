"""Loaded by DVC only (``hydra.plugins_path`` in .dvc/config), never by evalframe itself.

``dvc exp run -S ...`` composes conf/dvc.yaml with Hydra's compose API, which
knows only ``conf/``. This plugin gives that composition what
``python -m evalframe`` has: the config groups of installed plugins
(``retriever/bm25.yaml``) and the ``${ef.data:...}`` resolver. The code lives
in evalframe.app.dvc_hydra.
"""

from pathlib import Path

from evalframe.app.dvc_hydra import EvalframeSearchPath, register_resolvers

register_resolvers(repo_root=Path(__file__).resolve().parents[3])

__all__ = ["EvalframeSearchPath"]
