// The live page of the fleet: GET /dashboard is one static HTML file (assets/dashboard.html: its
// own CSS and JS, no framework) that polls GET /dashboard/state. The caller checks access first
// (the admin API's rules).
import { readFileSync } from 'node:fs';
import { HttpError, notFound } from '../call/errors.js';
import type { HttpCall, HttpReply } from '../call/call.js';
import type { DashboardState } from './state.js';

const PAGE_URL = new URL('../../../assets/dashboard.html', import.meta.url);
let page: string | undefined;

/** The page's HTML, read once (from the package: src/ and dist/ sit at the same depth). */
function pageHtml(): string {
  page ??= readFileSync(PAGE_URL, 'utf8');
  return page;
}

export function isDashboardPath(path: string): boolean {
  return path === '/dashboard' || path.startsWith('/dashboard/');
}

export function handleDashboard(call: HttpCall, path: string, state: () => DashboardState): HttpReply {
  const route = path === '/dashboard' || path === '/dashboard/' ? 'page' : path === '/dashboard/state' ? 'state' : undefined;
  if (route === undefined) throw notFound(`no route ${call.method} ${path}`, 'unknown_route');
  if (call.method !== 'GET' && call.method !== 'HEAD') {
    throw new HttpError(405, 'invalid_request_error', 'method_not_allowed', `${path} takes GET, not ${call.method}`, { allow: 'GET' });
  }
  const noStore = { 'cache-control': 'no-store' };
  if (route === 'page') {
    return {
      status: 200,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        ...noStore,
        'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'",
      },
      body: pageHtml(),
    };
  }
  return { status: 200, headers: { 'content-type': 'application/json', ...noStore }, body: JSON.stringify(state()) };
}
