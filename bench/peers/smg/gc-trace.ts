// Reads a process's --trace-gc-nvp output (one line per GC: `gc=s` a scavenge, `gc=mc` a
// mark-compact, then name=value pairs) as it grows, a stretch at a time: how many of each and,
// per scavenge, what it found alive in the young generation and promoted to the old one. A
// structure that keeps dead requests reachable from the old generation shows as a jump in both
// (bench/PERFORMANCE.md, "The router after its first full GC").
import { closeSync, openSync, readSync } from 'node:fs';
import { median } from '../../lib/stats.js';

export interface GcStretch {
  scavenges: number;
  markCompacts: number;
  /** Medians per scavenge, KB: found alive in the young generation, promoted to the old. */
  survivedKb: number;
  promotedKb: number;
  /** Median scavenge pause, ms. */
  scavengeMs: number;
}

export class GcTrace {
  private offset = 0;

  constructor(private readonly file: string) {}

  /** The GCs traced since the previous call (complete lines only; V8 writes them through a buffer, so the last few may come with the next call). */
  next(): GcStretch {
    const text = this.readNew();
    const scavenges: Array<Record<string, string>> = [];
    let markCompacts = 0;
    for (const line of text.split('\n')) {
      const f = fields(line);
      if (f.gc === 's') scavenges.push(f);
      else if (f.gc === 'mc') markCompacts++;
    }
    const kb = (name: string) => median(scavenges.map((s) => Number(s[name]) / 1024));
    return {
      scavenges: scavenges.length,
      markCompacts,
      survivedKb: kb('new_space_survived'),
      promotedKb: kb('promoted'),
      scavengeMs: median(scavenges.map((s) => Number(s.pause))),
    };
  }

  private readNew(): string {
    const fd = openSync(this.file, 'r');
    try {
      const chunks: Buffer[] = [];
      const buf = Buffer.alloc(1 << 20);
      let at = this.offset;
      for (let n; (n = readSync(fd, buf, 0, buf.length, at)) > 0; at += n) chunks.push(Buffer.from(buf.subarray(0, n)));
      const text = Buffer.concat(chunks).toString('utf8');
      // A line still being written is read next time.
      const complete = text.slice(0, text.lastIndexOf('\n') + 1);
      this.offset += Buffer.byteLength(complete);
      return complete;
    } finally {
      closeSync(fd);
    }
  }
}

export function formatStretch(s: GcStretch): string {
  return `${s.scavenges} scavenges (median alive ${Math.round(s.survivedKb)} KB, promoted ${Math.round(s.promotedKb)} KB, ${s.scavengeMs.toFixed(2)} ms), ${s.markCompacts} mark-compacts`;
}

function fields(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of line.matchAll(/(\w[\w.]*)=(\S+)/g)) out[m[1]] = m[2];
  return out;
}
