"""Layer 3, assessment: aggregates with confidence intervals, paired statistics, gates,
baselines, the paired comparison of two runs, and the run folder that stores them.
"""
