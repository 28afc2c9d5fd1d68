"""Monte Carlo relevance mining (evalframe mine): trials, statistics, outputs."""
