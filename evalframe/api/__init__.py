"""The Python API, for notebooks and scripts: run, load and compare experiments as objects.

It is the top layer of the core, above the command line (``app``): it composes
a config with the command line's own composition, runs it through the same
pipeline and reads results through the run folder's one owner
(``assess/runfolder.py``). ``evalframe.run``, ``evalframe.load`` and
``evalframe.compare`` are these functions (see docs/python-api.md).
"""

from evalframe.api.comparison import Comparison, compare
from evalframe.api.result import Estimate, Result, load
from evalframe.api.runner import run

__all__ = ["Comparison", "Estimate", "Result", "compare", "load", "run"]
