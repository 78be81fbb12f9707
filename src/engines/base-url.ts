// A worker's base URL, checked: what the HTTP client connects to, and what a worker pool accepts
// (without loading the HTTP client).

/** Splits a base URL into the pool's origin and the path prefix routes are appended to. */
export function parseBaseUrl(baseUrl: string): { origin: string; prefix: string } {
  if (typeof baseUrl !== 'string') throw new TypeError(`baseUrl must be a string, got ${typeof baseUrl}`);
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`baseUrl must be an absolute http(s) URL, got '${baseUrl}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must use http or https, got '${baseUrl}'`);
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new TypeError(`baseUrl must not carry a query, fragment or credentials, got '${baseUrl}'`);
  }
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') };
}
