"""``python -m evalframe``: the same as the ``evalframe`` console script."""

try:
    from evalframe.app.cli import entry
except KeyboardInterrupt:  # Ctrl-C while Python still imports: as quiet as one later on
    import sys

    print("interrupted", file=sys.stderr)
    raise SystemExit(130) from None

entry()
