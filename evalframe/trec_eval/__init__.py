"""``evalframe trec-eval``: a drop-in for trec_eval's command line on evalframe's engine."""
