"""``python -m evalframe ARGS`` with evalframe and its plugins imported from another checkout.

For measuring an earlier commit beside this one in the same session, on the
same data: ``git worktree add /tmp/base <commit>`` then

    .venv/bin/python bench/at_source.py /tmp/base rescore RUN_DIR ...

The checkout and each of its ``plugins/*`` folders go first on ``sys.path``
(before the current directory and this checkout's editable install); the
entry points (plugin names) are this environment's, so the two versions must
declare the same plugins.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main() -> None:
    src = Path(sys.argv[1]).resolve()
    if not (src / "evalframe" / "__init__.py").is_file():
        sys.exit(f"at_source.py: {src} is not an evalframe checkout")
    sys.path[:0] = [str(src), *(str(p) for p in sorted((src / "plugins").glob("*/")))]
    sys.argv = ["evalframe", *sys.argv[2:]]
    runpy.run_module("evalframe", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
