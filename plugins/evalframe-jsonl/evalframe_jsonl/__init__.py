"""JSONL golden sets (the B.O.B format) and JSONL corpora for evalframe.

Importing this package registers nothing: the entry points name the modules
(``evalframe_jsonl.dataset``, ``evalframe_jsonl.corpus``) so each is imported
only when selected.
"""
