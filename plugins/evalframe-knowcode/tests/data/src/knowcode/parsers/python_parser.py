"""Python parsing for the sample KnowCode codebase used by the tests."""

import ast


def parse_module(source):
    return ast.parse(source)


class PythonParser:
    def entities(self, source):
        return [node.name for node in ast.walk(parse_module(source)) if hasattr(node, "name")]
