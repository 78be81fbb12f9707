// The engine metrics a simulated worker exposes at /metrics, under vLLM's metric names so that
// anything scraping vLLM reads them unchanged. Values are read from the engine model at scrape
// time; each worker has its own prom-client Registry (several workers share one process).
import { Counter, Gauge, Registry } from 'prom-client';

export interface EngineMetricsSnapshot {
  kvUsage: number;
  running: number;
  waiting: number;
  prefixHitRate: number;
  preemptions: number;
  promptTokens: number;
  cachedTokens: number;
  generatedTokens: number;
}

export interface WorkerCounters {
  kvRecomputes: number;
  holdsActive: number;
  eventBatchesPublished: number;
  eventBatchesDropped: number;
  injectedFailures: number;
}

export interface WorkerMetricsSource {
  engine(): EngineMetricsSnapshot;
  worker(): WorkerCounters;
  /** When the engine (process) started, in seconds since the epoch: a restart changes it. */
  startTimeSeconds(): number;
}

export class WorkerMetrics {
  readonly registry = new Registry();

  constructor(source: WorkerMetricsSource, labels: { model_name: string; engine: string }) {
    this.registry.setDefaultLabels(labels);
    const registers = [this.registry];
    // Read at scrape time; the engine's metrics() is a few field reads.
    const snap = () => ({ e: source.engine(), w: source.worker() });
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    // Counters mirror totals kept by the engine: reset and re-increment at scrape time.
    const counter = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    // As prometheus_client's process collector gives vLLM's /metrics (a router reads it to see restarts).
    gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds', () => source.startTimeSeconds());
    gauge('vllm:kv_cache_usage_perc', 'KV cache usage, 1 = 100 percent', () => snap().e.kvUsage);
    gauge('vllm:gpu_cache_usage_perc', 'KV cache usage, 1 = 100 percent (older vLLM name)', () => snap().e.kvUsage);
    gauge('vllm:num_requests_running', 'Requests in the running batch', () => snap().e.running);
    gauge('vllm:num_requests_waiting', 'Requests waiting to be scheduled', () => snap().e.waiting);
    gauge('vllm:gpu_prefix_cache_hit_rate', 'Prompt tokens served from the prefix cache / prompt tokens', () => snap().e.prefixHitRate);
    counter('vllm:num_preemptions_total', 'Requests preempted for lack of KV blocks', () => snap().e.preemptions);
    counter('vllm:prefix_cache_queries_total', 'Prompt tokens looked up in the prefix cache', () => snap().e.promptTokens);
    counter('vllm:prefix_cache_hits_total', 'Prompt tokens found in the prefix cache', () => snap().e.cachedTokens);
    counter('vllm:prompt_tokens_total', 'Prompt tokens processed', () => snap().e.promptTokens);
    counter('vllm:generation_tokens_total', 'Tokens generated', () => snap().e.generatedTokens);
    counter('kvroute_sim_kv_recomputes_total', 'KV pulls that failed and fell back to computing the prompt', () => snap().w.kvRecomputes);
    gauge('kvroute_sim_kv_holds', 'Prefill handoffs open: running, or finished and holding blocks for a decode worker', () => snap().w.holdsActive);
    counter('kvroute_sim_event_batches_published_total', 'KV event batches sent', () => snap().w.eventBatchesPublished);
    counter('kvroute_sim_event_batches_dropped_total', 'KV event batches dropped by fault injection', () => snap().w.eventBatchesDropped);
    counter('kvroute_sim_injected_failures_total', 'Requests failed by fault injection', () => snap().w.injectedFailures);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
