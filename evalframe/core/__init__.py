"""Layer 0, the core: the data model, the error types, record checks and file I/O.

Everything else in evalframe builds on these modules, and they import nothing
of evalframe's own outside this package (pydantic and numpy only).
"""
