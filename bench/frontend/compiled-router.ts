// The router modules the frontend suite times, from the compiled package (../lib/compiled.ts), as
// `kvroute serve` runs them; their types come from src/.
import { importCompiled } from '../lib/compiled.js';

type RouterModule = typeof import('../../src/server/app/router.js');
type UwsModule = typeof import('../../src/server/http/uws.js');
type LoggerModule = typeof import('../../src/server/observability/logger.js');
type SilentLoggerModule = typeof import('../../src/util/logger.js');

export interface CompiledRouter {
  createRouter: RouterModule['createRouter'];
  listenUws: UwsModule['listenUws'];
  createLogger: LoggerModule['createLogger'];
  silentLogger: SilentLoggerModule['silentLogger'];
}

let loaded: Promise<CompiledRouter> | undefined;

export function compiledRouter(): Promise<CompiledRouter> {
  loaded ??= (async () => {
    const [router, uws, logger, silent] = await Promise.all([
      importCompiled<RouterModule>('server/app/router.js'),
      importCompiled<UwsModule>('server/http/uws.js'),
      importCompiled<LoggerModule>('server/observability/logger.js'),
      importCompiled<SilentLoggerModule>('util/logger.js'),
    ]);
    return { createRouter: router.createRouter, listenUws: uws.listenUws, createLogger: logger.createLogger, silentLogger: silent.silentLogger };
  })();
  return loaded;
}
