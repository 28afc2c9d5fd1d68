"""Layer 3, retrieval: asking a retriever for every golden query, and the retrieval cache."""
