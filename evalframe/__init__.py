"""evalframe: retrieval evaluation that says whether a change is better, worse, or noise."""

__version__ = "0.1.0"
