"""Run pytrec_eval on a batch of cases in its own process (used by test_oracle.py).

pytrec_eval-terrier 0.5.11 can hang or crash after many evaluations in one
process, so the oracle never runs inside the test process. Reads a JSON list of
``[qrels, run, measures, relevance_level]`` from stdin, prints a JSON list of
results.
"""

import json
import sys

import pytrec_eval

out = []
for qrels, run, measures, rel in json.load(sys.stdin):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures), relevance_level=rel)
    out.append(evaluator.evaluate(run))
print(json.dumps(out))
