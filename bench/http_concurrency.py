"""An HTTP retriever answering in 50 ms, asked 200 queries with max_concurrency 1 and 16.

A local HTTP/1.1 server on 127.0.0.1 (keep-alive, a thread per connection)
sleeps 50 ms per request and returns a deterministic ranking per query.
``python -m evalframe`` runs against it with the retrieval cache off, once
per setting and round; the retrieval time is the server's view (first
request received to last answer sent), the total the command's wall time.
The metrics of every run must be identical (latency aside).

    .venv/bin/python bench/http_concurrency.py [--queries 200] [--delay 0.05] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from child import machine  # noqa: E402


class Server:
    def __init__(self, delay: float, n_docs: int = 1000) -> None:
        self.times: list[tuple[float, float]] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                began = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                q = int(str(body["query_id"]).lstrip("q"))
                time.sleep(delay)
                hits = [
                    {"id": f"d{(q * 37 + j * 11) % n_docs}", "score": 100.0 - j}
                    for j in range(int(body["k"]))
                ]
                payload = json.dumps({"results": hits}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                with lock:
                    outer.times.append((began, time.monotonic()))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/search"

    def span(self) -> float:
        return max(e for _, e in self.times) - min(b for b, _ in self.times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "http_concurrency.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="evalframe-bench-http-"))
    golden = work / "golden.jsonl"
    with open(golden, "w") as fh:
        for q in range(args.queries):
            judged = sorted({f"d{(q * 37 + j * 11) % 1000}" for j in (0, 3, 50)} | {f"d{q}"})
            record = {"id": f"q{q}", "question": f"question {q}", "expected_chunks": judged}
            fh.write(json.dumps(record) + "\n")
    env = {**os.environ, "EVALFRAME_TRACKING": "none", "EVALFRAME_CACHE_DIR": str(work / "c")}
    rows: dict[int, list[dict[str, float]]] = {c: [] for c in args.concurrency}
    metrics: dict[int, dict[str, Any]] = {}
    for r in range(args.rounds):
        for c in args.concurrency:
            server = Server(args.delay)
            out = work / f"run-{c}-{r}"
            start = time.perf_counter()
            command = [
                *(sys.executable, "-m", "evalframe", f"dataset.path={golden}", "corpus=none"),
                *("retriever=http", f"retriever.url={server.url}", "depth=10"),
                *(f"retriever.max_concurrency={c}", "cache.retrieval=false"),
                f"hydra.run.dir={out}",
            ]
            done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=work)
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            total = time.perf_counter() - start
            server.httpd.shutdown()
            rows[c].append({"retrieval_s": server.span(), "total_s": total})
            found = json.loads((out / "metrics.json").read_text())
            metrics[c] = {k: v for k, v in found.items() if not k.startswith("latency.")}
            print(
                f"round {r + 1}, max_concurrency {c}: retrieval {server.span():.2f}s, "
                f"command {total:.2f}s",
                flush=True,
            )
    identical = all(m == metrics[args.concurrency[0]] for m in metrics.values())
    result = {
        "queries": args.queries,
        "delay_s": args.delay,
        "machine": machine(),
        "runs": rows,
        "metrics_identical": identical,
        "metrics": metrics[args.concurrency[0]],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    base = min(x["retrieval_s"] for x in rows[args.concurrency[0]])
    print("\n| max_concurrency | retrieval s (min) | command s (min) | speed-up |")
    print("|---:|---:|---:|---:|")
    for c, xs in rows.items():
        best = min(x["retrieval_s"] for x in xs)
        print(f"| {c} | {best:.2f} | {min(x['total_s'] for x in xs):.2f} | {base / best:.1f}x |")
    print(f"\nmetrics identical across settings: {identical}")


if __name__ == "__main__":
    main()
