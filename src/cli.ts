#!/usr/bin/env node
// `kvroute <command>`: each command lives in src/cli/<command>.ts and is loaded on demand, so
// `kvroute mock` never pays for the server's imports and vice versa.

import { isUsageError } from './cli/usage.js';

type CommandModule = { run(argv: string[]): Promise<number> };

const COMMANDS: Record<string, { summary: string; load: () => Promise<CommandModule> }> = {
  // Each command module registers here with one line.
  serve: { summary: 'the KV-aware router: OpenAI API on uWebSockets.js (default: an embedded simulated fleet)', load: () => import('./cli/serve.js') },
  mock: { summary: 'simulated engine workers (OpenAI HTTP, ZeroMQ KV events, prefill/decode handoffs)', load: () => import('./cli/mock.js') },
  replay: { summary: 'replay a Mooncake trace offline (virtual time) or against a live router', load: () => import('./cli/replay.js') },
  'config-schema': { summary: "the JSON Schema of serve's config file (editors validate fleet files with it)", load: () => import('./cli/config-schema.js') },
  'build-native': {
    summary: 'build the native addon from source with cargo (for platforms without a prebuilt one)',
    load: () => import('./cli/build-native.js'),
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)} ${c.summary}`);
  return ['usage: kvroute <command> [options]   (kvroute <command> --help for its options)', '       kvroute --version', '', 'commands:', ...lines].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-v') {
    const { packageVersion } = await import('./util/package-version.js');
    console.log(packageVersion());
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name ? 0 : 1;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`kvroute: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  return (await command.load()).run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`kvroute: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = isUsageError(err) ? 2 : 1;
  },
);
