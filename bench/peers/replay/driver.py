"""Replays a Mooncake-format trace with Dynamo's offline simulator (the mocker engines and its
router in virtual time, from the ai-dynamo wheels) for bench/peers/replay/peer.ts: one command per
stdin line, one JSON line back, so that its runs alternate with kvroute's.

usage: python driver.py <trace.jsonl> <workers>
commands:
  run <router_mode> [<block_size> <num_gpu_blocks>]   router_mode: round_robin | kv_router; the
      engines' KV block size in tokens and cache size in blocks (without them: the mocker's
      defaults). The reply echoes both as Dynamo's own config normalizer read them.
  quit
"""

import json
import sys
import time

from dynamo._core import _normalize_mocker_config
from dynamo.replay import run_trace_replay

ROUTER_MODES = ("round_robin", "kv_router")


def parse_command(line):
    """("quit",) or ("run", router_mode, engine_args or None); ValueError for anything else."""
    words = line.split()
    if words == ["quit"]:
        return ("quit",)
    if not words or words[0] != "run" or len(words) not in (2, 4):
        raise ValueError(f"unknown command {line.strip()!r} (run <router_mode> [<block_size> <num_gpu_blocks>] | quit)")
    mode = words[1]
    if mode not in ROUTER_MODES:
        raise ValueError(f"unknown router mode {mode!r} (one of {', '.join(ROUTER_MODES)})")
    if len(words) == 2:
        return ("run", mode, None)
    sizes = []
    for name, word in (("block_size", words[2]), ("num_gpu_blocks", words[3])):
        if not (word.isascii() and word.isdigit()) or int(word) < 1:
            raise ValueError(f"{name} must be a positive integer, got {word!r}")
        sizes.append(int(word))
    # The mocker's engine config, in the form its normalizer (and the native replay) takes.
    return ("run", mode, {"engine": {"block_size": sizes[0], "num_gpu_blocks": sizes[1]}})


def run(trace, workers, mode, engine_args):
    # What the replay will use, defaults filled in: echoed so the caller can check the setting took.
    engine = _normalize_mocker_config({} if engine_args is None else engine_args)["engine"]
    started = time.perf_counter()
    report = run_trace_replay(
        trace,
        num_workers=workers,
        router_mode=mode,
        # The traces name 512-token blocks (traces/README.md).
        trace_block_size=512,
        extra_engine_args=engine_args,
    )
    call_s = time.perf_counter() - started
    s = report.summary
    return {
        "type": "run",
        "router_mode": mode,
        "block_size": engine["block_size"],
        "num_gpu_blocks": engine["num_gpu_blocks"],
        "call_s": call_s,
        "wall_time_ms": s["wall_time_ms"],
        "duration_ms": s["duration_ms"],
        "requests": s["num_requests"],
        "completed": s["completed_requests"],
        "prefix_cache_reused_ratio": s["prefix_cache_reused_ratio"],
        "median_ttft_ms": s["median_ttft_ms"],
    }


def main() -> None:
    trace, workers = sys.argv[1], int(sys.argv[2])
    print(json.dumps({"type": "ready", "trace": trace, "workers": workers}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            command = parse_command(line)
            if command[0] == "quit":
                break
            reply = run(trace, workers, command[1], command[2])
        except Exception as err:  # a refused command or a failed replay: said, and the next one read
            reply = {"type": "error", "error": f"{type(err).__name__}: {err}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
