"""BM25 (bm25s) retriever for evalframe; see evalframe_bm25.retriever."""
