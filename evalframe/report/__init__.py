"""Layer 5, reports: what people read about finished runs (the terminal report, the
multi-run Markdown/HTML summary). Reports read results; they never run anything.
"""
