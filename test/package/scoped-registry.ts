// A registry for one npm scope, on loopback: it serves the packuments of the packages it is given
// and the tarballs it has, and records every request. A project's .npmrc points the scope here
// (`@scope:registry=...`) while every other package still comes from the real registry, so an
// install resolves kvroute's optional dependencies exactly as it would once they are published.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';

export interface RegistryPackage {
  /** The package.json of the version served. */
  manifest: { name: string; version: string } & Record<string, unknown>;
  /** Its tarball; without one the packument still lists the version, and fetching it gets 404. */
  tarball?: string;
}

export interface ScopedRegistry {
  url: string;
  /** Every request's path, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startScopedRegistry(packages: readonly RegistryPackage[]): Promise<ScopedRegistry> {
  const requests: string[] = [];
  const tarballs = new Map<string, Buffer>();
  const packuments = new Map<string, string>();
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://registry').pathname);
    requests.push(path);
    const body = path.startsWith('/-/tarballs/') ? tarballs.get(path.slice('/-/tarballs/'.length)) : packuments.get(path.slice(1));
    if (req.method !== 'GET' || body === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    // no-store: the packuments of one test run must not be answered from npm's cache in the next.
    res.writeHead(200, { 'content-type': typeof body === 'string' ? 'application/json' : 'application/octet-stream', 'cache-control': 'no-store' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  for (const { manifest, tarball } of packages) {
    const file = tarball ? basename(tarball) : `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`;
    const dist: Record<string, string> = { tarball: `${url}/-/tarballs/${file}` };
    if (tarball) {
      const bytes = readFileSync(tarball);
      tarballs.set(file, bytes);
      dist.integrity = `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
      dist.shasum = createHash('sha1').update(bytes).digest('hex');
    }
    const version = { ...manifest, _id: `${manifest.name}@${manifest.version}`, dist };
    packuments.set(
      manifest.name,
      JSON.stringify({ name: manifest.name, 'dist-tags': { latest: manifest.version }, versions: { [manifest.version]: version } }),
    );
  }
  return {
    url,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
