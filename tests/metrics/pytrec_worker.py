"""Run pytrec_eval on a batch of cases in its own process (used by test_oracle.py).

pytrec_eval-terrier 0.5.11 can hang or crash on some cases, so the oracle never
runs inside the test process. Reads a JSON list of ``[qrels, run, measures,
relevance_level]`` from stdin and prints one JSON result per line, flushed as
each case finishes: when a case hangs, the caller knows from the lines already
printed which one it is, skips it, and goes on with the next in a new process
(rather than trying the whole batch again case by case).
"""

import json
import sys

import pytrec_eval

for qrels, run, measures, rel in json.load(sys.stdin):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures), relevance_level=rel)
    print(json.dumps(evaluator.evaluate(run)), flush=True)
