"""TREC, BEIR and Cranfield test collections for evalframe.

Importing this package registers nothing: the entry points name the modules
(``evalframe_trec.trec``, ``evalframe_trec.beir``, ``evalframe_trec.cranfield``)
so each is imported only when selected. The original Cranfield files are
packaged under ``evalframe_trec/data/cranfield``.
"""
