// What the router sees of a running discovery: its state for /health and /metrics, and close().
import type { DiscoveryStatsSample } from '../observability/discovery-metrics.js';

/** /health's `discovery`: free of internal addresses (the log has the details). */
export interface DiscoveryStatus {
  source: 'kubernetes';
  namespace: string;
  selector: string;
  /** The last list or watch reached the API server. False: routing on the last known fleet. */
  connected: boolean;
  /** While disconnected: since when (ms since the epoch). */
  disconnectedSince?: number;
  /** While disconnected: what failed, as a kind (unreachable, unauthorized, forbidden, http_<status>, watch_cut). */
  lastError?: string;
  pods: DiscoveryStatsSample['pods'];
}

export interface Discovery {
  status(): DiscoveryStatus;
  stats(): DiscoveryStatsSample;
  /** Stops watching; the discovered workers stay as they are (the router is closing). */
  close(): Promise<void>;
}
