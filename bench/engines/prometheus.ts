// Prometheus text exposition read into samples: what the suite compares (vLLM's
// vllm:prefix_cache_hits_total and queries, process_start_time_seconds; kvroute's own counters).

/** Sample values by metric name, one entry per label set (`labels` as written, '' for none). */
export type Samples = Map<string, Array<{ labels: string; value: number }>>;

export function parsePrometheus(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const list = out.get(m[1]) ?? [];
    list.push({ labels: m[2] ?? '', value });
    out.set(m[1], list);
  }
  return out;
}

/** The sum of a metric over its label sets whose labels contain every `match` (0 when absent). */
export function sampleSum(samples: Samples, name: string, ...match: string[]): number {
  return (samples.get(name) ?? []).filter((s) => match.every((m) => s.labels.includes(m))).reduce((a, s) => a + s.value, 0);
}
