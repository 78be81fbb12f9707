// One request's preprocessing as the router runs it, each stage timed: the native path
// (src/server/openai/request.ts, the tokenizer's and template's own stage timings) and the
// JavaScript reference (bench/reference/js-preprocess.ts), both followed by the same routing
// decision (hash, then match + select + book, timed inside the routing core).
import { lastPreprocessTimings } from '../../src/core/tokenizer.js';
import type { RoutingCore } from '../../src/core/routing-core.js';
import { stringifyBody } from '../../src/engines/json.js';
import { parseRequestBody, prepareRequest, type Preprocessor } from '../../src/server/openai/request.js';
import type { JsPreprocess, JsPreprocessStages } from '../reference/js-preprocess.js';
import type { BenchRequest } from './requests.js';

export const STAGES = ['parse', 'template', 'tokenize', 'hash', 'decide', 'engine body', 'total'] as const;
export type Stage = (typeof STAGES)[number];
export type StageTimes = Record<Stage, number>;

/** One request through the native path. parse: the body read natively and the rest by JSON.parse. */
export function nativeRequest(req: BenchRequest, pre: Preprocessor, core: RoutingCore, id: string): StageTimes {
  const route = req.kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
  const t0 = performance.now();
  const parsed = parseRequestBody(route, req.body, pre);
  const t1 = performance.now();
  const native = lastPreprocessTimings();
  if (!parsed.scanned) throw new Error(`the native path declined the ${req.kind} request`);
  const prepared = prepareRequest(route, parsed.json, {}, pre, parsed.scanned);
  const body = stringifyBody(prepared.body);
  const t2 = performance.now();
  const decision = core.route(prepared.tokens, { requestId: id });
  const t3 = performance.now();
  core.free(id);
  if (body.length === 0) throw new Error('empty engine body');
  const readAndRest = (t1 - t0) * 1000 - native.renderUs - native.tokenizeUs;
  return stages(readAndRest, native.renderUs, native.tokenizeUs, decision.timingsUs, (t2 - t1) * 1000, (t3 - t0) * 1000);
}

/** One request through the JavaScript reference. */
export function jsRequest(req: BenchRequest, js: JsPreprocess, core: RoutingCore, id: string): StageTimes {
  const t: JsPreprocessStages = { parseUs: 0, templateUs: 0, tokenizeUs: 0, engineBodyUs: 0 };
  const t0 = performance.now();
  const out = js.run(req.kind === 'chat', req.body, t);
  const decision = core.route(out.tokens, { requestId: id });
  const t1 = performance.now();
  core.free(id);
  return stages(t.parseUs, t.templateUs, t.tokenizeUs, decision.timingsUs, t.engineBodyUs, (t1 - t0) * 1000);
}

function stages(parse: number, template: number, tokenize: number, route: { hash: number; total: number }, engineBody: number, total: number): StageTimes {
  return { parse, template, tokenize, hash: route.hash, decide: route.total - route.hash, 'engine body': engineBody, total };
}
