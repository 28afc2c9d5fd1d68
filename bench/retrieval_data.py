"""Generate a synthetic corpus and golden set for the retrieval benchmark (bench/pipeline.py).

Shape (from the speed issue): ``docs`` documents and ``queries`` questions, by
default 100k x 5k. Text is made of pseudo-words built from syllables, drawn
from a Zipf background vocabulary mixed with a topic vocabulary (1,000
topics), plus common English stopwords, so that the stemmer, the stopword
list and BM25's idf all have work to do. Each query takes 2-4 words from one
target document's topic words plus 1-2 of the 20 most frequent background
words (as natural questions share "use" or "system" with most documents);
the target is judged 2 and two other documents of the same topic 1.

Files: ``corpus.jsonl`` ({"id", "text"}) and ``golden.jsonl`` (the B.O.B
format: {"id", "question", "expected_chunks": {doc: label}}), written under
``bench/data/retrieval-<docs>x<queries>/``. The output is a pure function of
``(docs, queries, seed)``.

    .venv/bin/python bench/retrieval_data.py --docs 100000 --queries 5000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SYLLABLES = [
    c + v
    for c in ("b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st", "tr")
    for v in ("a", "e", "i", "o", "u", "ai", "ou")
]
STOPWORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "this",
    "are",
    "be",
    "or",
    "an",
    "it",
]
VOCAB = 60_000
TOPICS = 1_000
TOPIC_WORDS = 40
#: queries take 1-2 of the most frequent background words ("use", "system" in real text)
COMMON = 20


def vocabulary(rng: np.random.Generator) -> np.ndarray:
    """``VOCAB`` distinct pseudo-words of 2-4 syllables."""
    words: dict[str, None] = {}
    while len(words) < VOCAB:
        n = int(rng.integers(2, 5))
        words["".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), n))] = None
    return np.array(list(words), dtype=object)


def default_dir(docs: int, queries: int) -> Path:
    return Path(__file__).parent / "data" / f"retrieval-{docs}x{queries}"


def generate(docs: int, queries: int, out: Path, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    zipf = 1.0 / np.arange(1, VOCAB + 1) ** 1.05
    zipf /= zipf.sum()
    topic_vocab = rng.integers(VOCAB // 20, VOCAB, size=(TOPICS, TOPIC_WORDS))
    doc_topic = rng.integers(0, TOPICS, size=docs)
    lengths = rng.integers(30, 121, size=docs)
    total = int(lengths.sum())
    background = rng.choice(VOCAB, size=total, p=zipf)
    topical = rng.random(total) < 0.3
    stop = rng.random(total) < 0.2
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    owner = np.repeat(np.arange(docs), lengths)
    words = np.where(
        topical, topic_vocab[doc_topic[owner], rng.integers(0, TOPIC_WORDS, total)], background
    )
    tokens = vocab[words]
    tokens[stop] = np.array(STOPWORDS, dtype=object)[rng.integers(0, len(STOPWORDS), stop.sum())]

    out.mkdir(parents=True, exist_ok=True)
    corpus_path = out / "corpus.jsonl"
    with open(corpus_path, "w", encoding="utf-8") as fh:
        for i in range(docs):
            text = " ".join(tokens[starts[i] : starts[i] + lengths[i]])
            fh.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")

    common_p = zipf[:COMMON] / zipf[:COMMON].sum()
    by_topic: dict[int, np.ndarray] = {}
    order = np.argsort(doc_topic, kind="stable")
    bounds = np.searchsorted(doc_topic[order], np.arange(TOPICS + 1))
    for t in range(TOPICS):
        by_topic[t] = order[bounds[t] : bounds[t + 1]]
    golden_path = out / "golden.jsonl"
    targets = rng.integers(0, docs, size=queries)
    with open(golden_path, "w", encoding="utf-8") as fh:
        for q, target in enumerate(targets):
            start, length = starts[target], lengths[target]
            doc_words = words[start : start + length]
            is_topic = topical[start : start + length] & ~stop[start : start + length]
            own = np.unique(doc_words[is_topic])
            n_own = min(int(rng.integers(2, 5)), own.size)
            chosen = np.concatenate(
                [
                    rng.choice(own, size=n_own, replace=False),
                    rng.choice(COMMON, size=int(rng.integers(1, 3)), p=common_p),
                ]
            )
            picked = vocab[np.unique(chosen.astype(np.int64))]
            judged = {f"d{target}": 2}
            mates = by_topic[int(doc_topic[target])]
            for other in rng.choice(mates, size=min(3, mates.size), replace=False):
                if int(other) != int(target) and len(judged) < 3:
                    judged[f"d{int(other)}"] = 1
            record = {"id": f"q{q}", "question": " ".join(picked), "expected_chunks": judged}
            fh.write(json.dumps(record) + "\n")
    return corpus_path, golden_path


def generate_in_child(docs: int, queries: int, out: Path) -> None:
    """:func:`generate` in a process of its own, for scripts that measure their children:
    ``ru_maxrss`` carries over fork and exec, so a parent that had generated the data
    itself would pass its own peak on to every child it then measures."""
    script = Path(__file__).resolve()
    command = [sys.executable, str(script), "--docs", str(docs), "--queries", str(queries)]
    subprocess.run([*command, "--out", str(out)], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="default: bench/data/retrieval-DOCSxQUERIES")
    args = parser.parse_args()
    out = args.out or default_dir(args.docs, args.queries)
    corpus, golden = generate(args.docs, args.queries, out, args.seed)
    print(corpus)
    print(golden)


if __name__ == "__main__":
    main()
