"""Replays a Mooncake-format trace with Dynamo's offline simulator (the mocker engines and its
router in virtual time, from the ai-dynamo wheels) for bench/peers/replay/peer.ts: one command per
stdin line, one JSON line back, so that its runs alternate with kvroute's.

usage: python driver.py <trace.jsonl> <workers>
commands: run <router_mode> (round_robin | kv_router), quit
"""

import json
import sys
import time

from dynamo.replay import run_trace_replay


def main() -> None:
    trace, workers = sys.argv[1], int(sys.argv[2])
    print(json.dumps({"type": "ready", "trace": trace, "workers": workers}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] != "run" or len(words) != 2:
            print(json.dumps({"type": "error", "error": f"unknown command {line.strip()!r}"}), flush=True)
            continue
        started = time.perf_counter()
        report = run_trace_replay(
            trace,
            num_workers=workers,
            router_mode=words[1],
            # The traces name 512-token blocks (traces/README.md).
            trace_block_size=512,
        )
        call_s = time.perf_counter() - started
        s = report.summary
        print(
            json.dumps(
                {
                    "type": "run",
                    "router_mode": words[1],
                    "call_s": call_s,
                    "wall_time_ms": s["wall_time_ms"],
                    "duration_ms": s["duration_ms"],
                    "requests": s["num_requests"],
                    "completed": s["completed_requests"],
                    "prefix_cache_reused_ratio": s["prefix_cache_reused_ratio"],
                    "median_ttft_ms": s["median_ttft_ms"],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
