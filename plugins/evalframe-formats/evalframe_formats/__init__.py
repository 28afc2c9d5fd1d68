"""Golden-set formats of other retrieval harnesses, for evalframe.

* ``galaxy``: the Galaxy tool-recommendation gold JSONL (``{"id", "query", "tools"}``),
  with named tool-id normalisers (:mod:`evalframe_formats.galaxy`).
* ``adk``: the ADK ``retrieval_dataset.yaml`` (pairs of a query and candidates
  judged ``YES``/``NO`` by Monte Carlo verification), as a dataset and a corpus
  (:mod:`evalframe_formats.adk`).
* ``generic``: any JSONL, JSON or CSV file with a field mapping in the config
  (:mod:`evalframe_formats.generic`).

Importing this package registers nothing: the entry points name the modules,
so each is imported only when selected.
"""
