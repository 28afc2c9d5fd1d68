"""``python -m evalframe``: the same as the ``evalframe`` console script."""

from evalframe.cli import entry

entry()
