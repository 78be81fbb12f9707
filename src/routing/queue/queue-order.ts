// The order of the router queue (Dynamo's router_queue_policy): strict priority classes first,
// then the policy's score, then arrival (so equal keys leave in the order they came).
//   fcfs  arrival minus the priority jump (seconds): the earliest effective arrival first, which
//         bounds the tail of TTFT
//   lcfs  arrival plus the jump: the latest first (for comparisons; it starves the oldest)
//   wspt  Smith's rule, (1 + jump) / uncached tokens: the shortest weighted job first, which
//         minimises the mean TTFT (long jobs wait while short ones keep coming)

import { QUEUE_POLICIES, type QueuePolicy } from '../../core/vocabulary.js';

export { QUEUE_POLICIES, type QueuePolicy };

/** What orders one queued request. */
export interface QueueKey {
  /** Strict class: a higher class always leaves first. */
  priority: number;
  /** The policy's score within a class: higher leaves first. */
  score: number;
  /** Arrival order in the queue: breaks ties, first come first. */
  seq: number;
}

export interface ScoreInputs {
  arrivalMs: number;
  /** Seconds earlier than its arrival a request counts (fcfs, lcfs); its extra weight (wspt). */
  priorityJump: number;
  /** Prompt tokens no eligible worker holds (the prefill work it brings). */
  uncachedTokens: number;
}

export function scoreOf(policy: QueuePolicy, s: ScoreInputs): number {
  switch (policy) {
    case 'fcfs':
      return s.priorityJump * 1000 - s.arrivalMs;
    case 'lcfs':
      return s.arrivalMs + s.priorityJump * 1000;
    case 'wspt':
      return (1 + s.priorityJump) / Math.max(1, s.uncachedTokens);
  }
}

/** Whether the policy's score depends on the uncached tokens (then it is refreshed at dequeue). */
export function scoreUsesOverlap(policy: QueuePolicy): boolean {
  return policy === 'wspt';
}

/** a leaves the queue before b. */
export function leavesBefore(a: QueueKey, b: QueueKey): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.score !== b.score) return a.score > b.score;
  return a.seq < b.seq;
}

export function isQueuePolicy(v: unknown): v is QueuePolicy {
  return typeof v === 'string' && (QUEUE_POLICIES as readonly string[]).includes(v);
}
