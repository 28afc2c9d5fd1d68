"""Configuration of the sample KnowCode codebase used by the tests."""

from dataclasses import dataclass


@dataclass
class AppConfig:
    sufficiency_threshold: float = 0.8
