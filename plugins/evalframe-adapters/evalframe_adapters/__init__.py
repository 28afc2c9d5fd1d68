"""evalframe retriever adapters: python, http, llm_recommender, fusion."""
