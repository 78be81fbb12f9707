// The Markdown form of a replay report: one table per section, readable in a terminal too.
import type { ReplayReport } from './replay.js';

const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : String(v));

export function replayMarkdown(r: ReplayReport): string {
  const lines: string[] = [];
  lines.push(`### Replay of ${r.trace}`);
  lines.push('');
  lines.push(
    `${r.requests} requests, ${fleetOf(r)}, block size ${r.block_size}, ${r.kv_blocks} KV blocks per worker${offloadOf(r)}, ` +
      `arrivals x${r.arrival_scale} (${fmt(r.offered_rps, 2)} req/s offered), seed ${r.seed}. ` +
      `Infinite-cache hit-rate bound: ${fmt(r.hit_rate_bound * 100)}% of prompt tokens (${fmt(r.hit_rate_bound_blocks * 100)}% of trace blocks). ` +
      `Simulated ${fmt(r.simulated_s)} s in ${fmt(r.wall_s)} s of wall time (${fmt(r.simulated_to_wall)}x).`,
  );
  lines.push('');
  lines.push(
    '| policy | TTFT p50 ms | TTFT p90 ms | TTFT p99 ms | TTFT mean ms | ITL p50 ms | E2E p50 ms | hit rate | of bound | req/s | load spread | refused |',
  );
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [name, p] of Object.entries(r.policies)) {
    lines.push(
      `| ${name} | ${fmt(p.ttft_ms.p50)} | ${fmt(p.ttft_ms.p90)} | ${fmt(p.ttft_ms.p99)} | ${fmt(p.ttft_ms.mean)} | ${fmt(p.itl_ms.p50, 2)} | ` +
        `${fmt(p.e2e_ms.p50)} | ${fmt(p.hit_rate * 100)}% | ${fmt((p.hit_rate / r.hit_rate_bound) * 100)}% | ${fmt(p.throughput_rps, 2)} | ` +
        `${fmt(p.load_spread, 2)} | ${p.refused} |`,
    );
  }
  const tiers = Object.entries(r.policies).filter(([, p]) => p.offload);
  if (tiers.length > 0) {
    lines.push('');
    lines.push('CPU offload tier (shares of prompt tokens at first admission):');
    lines.push('');
    lines.push('| policy | GPU hits | CPU hits (reloaded) | blocks offloaded | CPU evictions |');
    lines.push('|---|---:|---:|---:|---:|');
    for (const [name, p] of tiers) {
      const o = p.offload!;
      lines.push(`| ${name} | ${fmt(o.gpu_hit_rate * 100)}% | ${fmt(o.cpu_hit_rate * 100)}% | ${o.stores} | ${o.evictions} |`);
    }
  }
  if (r.sweep?.length) {
    const names = Object.keys(r.sweep[0].policies);
    lines.push('');
    lines.push('Load sweep (TTFT p90 ms; * = saturated):');
    lines.push('');
    lines.push(`| arrivals | offered req/s | ${names.join(' | ')} |`);
    lines.push(`|---|---:|${names.map(() => '---:').join('|')}|`);
    for (const pt of r.sweep) {
      const cells = names.map((n) => {
        const p = pt.policies[n];
        return p ? `${fmt(p.ttft_p90_ms)}${p.saturated ? '*' : ''}` : '';
      });
      lines.push(`| x${pt.scale} | ${fmt(pt.offered_rps, 2)} | ${cells.join(' | ')} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function offloadOf(r: ReplayReport): string {
  if (r.offload_blocks === undefined) return '';
  return ` + a CPU tier of ${r.offload_blocks} blocks (the router ${r.lower_tiers === false ? 'ignoring' : 'indexing'} it)`;
}

function fleetOf(r: ReplayReport): string {
  return r.prefill_workers === undefined
    ? `${r.workers} aggregated workers`
    : `${r.prefill_workers} prefill + ${r.decode_workers} decode workers (${HANDOFF_NAMES[r.handoff ?? 'vllm']} KV handoff)`;
}

const HANDOFF_NAMES = { vllm: 'vLLM NIXL', sglang: 'SGLang bootstrap', trtllm: 'TensorRT-LLM' } as const;
