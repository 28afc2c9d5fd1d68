"""The answering agent of the sample KnowCode codebase used by the tests."""


class Agent:
    def __init__(self, config, service):
        self.config = config
        self.service = service

    def smart_answer(self, query, force_llm=False):
        context = self.service.retrieve_context_for_query(query)
        if context.sufficiency_score >= self.config.sufficiency_threshold and not force_llm:
            return self._format_local_answer(context)
        return self.answer(query)

    def _format_local_answer(self, context):
        return {"source": "local", "text": context.text}

    def answer(self, query):
        return {"source": "llm", "text": query}
