"""Golden-set construction: KnowCode's pipeline (reference 002 §10.1, steps A-H) as a command.

``evalframe golden build +build=NAME`` (:mod:`evalframe.app.build_cmd`) runs
:func:`evalframe.build.engine.run_build`: the plan (:mod:`.plan`), the role
calls (:mod:`.calls`), steps A-F (:mod:`.steps`), the reviewer's loop and the
drift check (:mod:`.review`, :mod:`.drift`) and the release (:mod:`.assemble`),
each step reading and writing the batch folder (:mod:`.batch`). The rules a
record must meet are the format's (its dataset plugin's ``build_rules``); the
roles are plugins (:mod:`evalframe.plugin.roles`).
"""
