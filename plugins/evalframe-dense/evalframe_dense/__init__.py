"""Dense (sentence-transformers) retriever for evalframe; see evalframe_dense.retriever."""
