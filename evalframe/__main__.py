"""``python -m evalframe``: the same as the ``evalframe`` console script."""

from evalframe.app.cli import entry

entry()
