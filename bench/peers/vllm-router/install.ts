// vLLM's own router (`vllm-router`, the Rust router vLLM forked from SGLang's), pinned, installed
// with pip into a venv of its own under bench/.cache/peers/ the first time the peers suite needs it
// (a wheel with the router built in, about 24 MB).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { installVenv } from '../cache.js';

export const VLLM_ROUTER_VERSION = '0.1.17';

/** The `vllm-router` command of the pinned install, installing it first when needed. */
export async function installVllmRouter(log: (line: string) => void): Promise<string> {
  const venv = await installVenv({
    folder: `vllm-router-${VLLM_ROUTER_VERSION}`,
    packages: [`vllm-router==${VLLM_ROUTER_VERSION}`],
    what: `vllm-router ${VLLM_ROUTER_VERSION}`,
    pythonHint: 'vllm-router needs Python 3.8 or later',
    log,
  });
  const bin = join(venv, 'bin', 'vllm-router');
  if (!existsSync(bin)) throw new Error(`vllm-router ${VLLM_ROUTER_VERSION} is installed in ${venv} but has no bin/vllm-router`);
  return bin;
}
