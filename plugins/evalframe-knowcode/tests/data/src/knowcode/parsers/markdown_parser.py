"""Markdown parsing for the sample KnowCode codebase used by the tests."""


class MarkdownParser:
    """Turns Markdown files into sections."""

    def parse_file(self, path):
        with open(path) as handle:
            return self.parse_text(handle.read())

    def parse_text(self, text):
        return [line for line in text.splitlines() if line.startswith("#")]
