"""evalframe's solvers and validators for ``evalframe mine``.

Solvers: ``simulated`` (known success probabilities, for tests and the demo),
``command`` (any program speaking JSON on stdin/stdout), ``http`` (a JSON
endpoint). Validators: ``exact`` (the answer equals, contains or matches the
expected one), ``pytest`` (a test file passes against the answer), ``command``
(a program's exit code). The wire protocol is in :mod:`evalframe_mine.protocol`
and docs/mining.md.
"""
