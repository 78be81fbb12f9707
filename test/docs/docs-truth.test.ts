// The docs say only what holds: every file or link a README or docs page names exists, every
// error code the server can answer is in the error reference, and the import rules the folder
// READMEs state are the ones .dependency-cruiser.mjs enforces.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(import.meta.dirname, '..', '..'));
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The user-facing prose: the READMEs, docs/ and the current figures (dated history files are as written then). */
const DOCS = tracked.filter((f) => (/(^|\/)README\.md$/.test(f) || /^docs\/.*\.md$/.test(f) || f === 'bench/PERFORMANCE.md') && !f.startsWith('npm/'));

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of markdown.replace(/```[\s\S]*?```/g, '').split('\n')) {
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Markdown links outside code blocks: [text](target). */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

describe('docs name only what exists', () => {
  it.each(DOCS)('%s: every relative link resolves, anchors included', (doc) => {
    const broken: string[] = [];
    for (const link of linksOf(read(doc))) {
      if (/^[a-z]+:/.test(link)) continue; // https:, mailto:
      const [path, anchor] = link.split('#');
      const target = path === '' ? doc : normalize(join(dirname(doc), path));
      const abs = join(ROOT, target);
      if (!existsSync(abs)) {
        broken.push(`${link} (no ${target})`);
        continue;
      }
      if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(abs, 'utf8')).has(anchor)) broken.push(`${link} (no heading #${anchor} in ${target})`);
    }
    expect(broken).toEqual([]);
  });

  it.each(DOCS)('%s: every file its tables name exists', (doc) => {
    // A file table's first cell, `name.ext` or `path/name.ext`, names a file beside the README or from the root.
    const missing: string[] = [];
    for (const m of read(doc).matchAll(/^\|\s*`([\w./-]+\.(?:ts|mjs|rs|json|md|toml|sh))`/gm)) {
      const name = m[1];
      if (![join(dirname(doc), name), name].some((p) => existsSync(join(ROOT, p)))) missing.push(name);
    }
    expect(missing).toEqual([]);
  });
});

/** Every error code the server's own code can put in an error body, found where errors are made. */
function serverErrorCodes(): Map<string, string> {
  const codes = new Map<string, string>();
  const patterns = [
    /\b(?:badRequest|notFound)\((?:[^()]|\([^()]*\))*?,\s*'([a-z][a-z0-9_]+)'\s*\)/g,
    /\b(?:badRequest|notFound) = \(message: string, code = '([a-z][a-z0-9_]+)'/g,
    /new HttpError\(\s*\d+\s*,\s*'[a-z_]+'\s*,\s*'([a-z][a-z0-9_]+)'/g,
    /\bsuper\(\s*\d+\s*,\s*'[a-z_]+'\s*,\s*'([a-z][a-z0-9_]+)'/g,
    /\breply\(\s*\d+\s*,(?:[^()]|\([^()]*\))*?,\s*'[a-z_]+'\s*,\s*'([a-z][a-z0-9_]+)'/g,
    /\bcode = '([a-z][a-z0-9_]+)'/g,
    /\bsuper\(\s*(?:message|`[^`]*`)\s*(?:,\s*retryAfterMs)?\s*,\s*'([a-z][a-z0-9_]+)'\s*\)/g,
  ];
  const sources = tracked.filter((f) => /^src\/(server|routing|core|engines)\/.*\.ts$/.test(f));
  for (const file of sources) {
    const text = read(file).replace(/\s+/g, ' ');
    for (const p of patterns) for (const m of text.matchAll(p)) codes.set(m[1], file);
  }
  // The engine failures are a closed union; each is a code of its own.
  const union = /export type EngineFailure =([^;]*);/.exec(read('src/engines/errors.ts'));
  for (const m of union?.[1].matchAll(/'([a-z_]+)'/g) ?? []) codes.set(m[1], 'src/engines/errors.ts');
  return codes;
}

describe('the error reference', () => {
  const reference = read('docs/errors.md');
  const codes = serverErrorCodes();

  it('finds the codes it checks (the scan itself works)', () => {
    for (const known of ['invalid_json', 'no_eligible_worker', 'queue_full', 'engine_unreachable', 'rate_limit_exceeded'])
      expect(codes.has(known), known).toBe(true);
  });

  it('lists every error code the server can answer with', () => {
    const missing = [...codes].filter(([code]) => !reference.includes(`\`${code}\``)).map(([code, file]) => `${code} (${file})`);
    expect(missing).toEqual([]);
  });
});

/** The src/ folders a folder's files import (relative imports resolved; type-only imports count). */
function importedFolders(folder: string): Set<string> {
  const out = new Set<string>();
  for (const file of tracked.filter((f) => f.startsWith(`src/${folder}/`) && /\.(ts|mjs)$/.test(f))) {
    for (const m of read(file).matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
      const target = normalize(join(dirname(file), m[1]));
      const top = /^src\/([\w-]+)\//.exec(target)?.[1];
      if (top && top !== folder) out.add(top);
    }
  }
  return out;
}

describe('import rules stated in folder READMEs', async () => {
  const { SRC_LAYERS } = (await import(join(ROOT, '.dependency-cruiser.mjs'))) as { SRC_LAYERS: string[][] };
  const readmes = DOCS.filter((d) => /^src\/[\w-]+\/README\.md$/.test(d)).filter((d) => /^## Imports/m.test(read(d)));
  const importsSection = (doc: string) => /^## Imports\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(read(doc))?.[1] ?? '';

  it('finds the READMEs it checks', () => expect(readmes.length).toBeGreaterThan(5));

  it.each(readmes)('%s: its layer is the one .dependency-cruiser.mjs gives the folder', (doc) => {
    const folder = doc.split('/')[1];
    const stated = /Layer (\d+) of src\//.exec(importsSection(doc))?.[1];
    const layer = SRC_LAYERS.findIndex((l) => l.includes(folder));
    if (stated === undefined) expect(importsSection(doc)).toMatch(/top layer of src\//);
    else expect(Number(stated)).toBe(layer);
  });

  it.each(readmes)('%s: the folder imports only what it says it imports', (doc) => {
    const folder = doc.split('/')[1];
    const text = importsSection(doc).split(/\.\s/)[0]; // the statement: its first sentence
    if (/may import every layer/.test(text)) return; // the top layers: every lower one, enforced by the rules
    const stated = new Set([...text.matchAll(/`src\/([\w-]+)`/g)].map((m) => m[1]));
    if (/imports nothing from src\//.test(text)) expect([...importedFolders(folder)]).toEqual([]);
    else expect([...importedFolders(folder)].filter((f) => !stated.has(f))).toEqual([]);
  });
});
