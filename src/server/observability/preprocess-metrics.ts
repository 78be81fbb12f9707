// The metrics of the tokenizer prefix cache (native/src/tokenize/prefix_cache.rs), read at
// scrape time from its counters.
import type { Registry } from 'prom-client';
import type { PrefixCacheStats } from '../../core/tokenizer.js';
import { scrapedCounter, scrapedGauge } from './scraped.js';

/** What /metrics reads of the prefix cache. */
export type TokenizerCacheSample = PrefixCacheStats;

export function registerTokenizerCacheMetrics(registry: Registry, source: () => TokenizerCacheSample | undefined): void {
  scrapedCounter(
    registry,
    source,
    'kvroute_tokenizer_prefix_cache_lookups_total',
    'Long prompts looked up in the tokenizer prefix cache: hit (began with a cached prefix) or miss',
    'result',
    {
      hit: (s) => s.hits,
      miss: (s) => s.misses,
    },
  );
  scrapedCounter(
    registry,
    source,
    'kvroute_tokenizer_prefix_cache_tokens_total',
    'Token ids of looked-up prompts: reused (copied from the cache: the tokens saved) or tokenized',
    'source',
    {
      reused: (s) => s.reusedTokens,
      tokenized: (s) => s.encodedTokens,
    },
  );
  scrapedCounter(
    registry,
    source,
    'kvroute_tokenizer_prefix_cache_evictions_total',
    'Prefix pieces evicted to keep the cache within tokenizerCacheBytes',
    'reason',
    { bytes: (s) => s.evictions },
  );
  scrapedGauge(registry, source, 'kvroute_tokenizer_prefix_cache_bytes', 'Bytes the tokenizer prefix cache holds', (s) => s.bytes);
  scrapedGauge(registry, source, 'kvroute_tokenizer_prefix_cache_pieces', 'Message-boundary pieces the tokenizer prefix cache holds', (s) => s.pieces);
}
