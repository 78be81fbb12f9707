// `kvroute config-schema`: prints the JSON Schema of the configuration file (the committed copy
// is schema/config.schema.json), for editors and CI checks of fleet files.
import { configJsonSchemaText } from '../server/config/json-schema.js';

export const HELP = `usage: kvroute config-schema

Prints the JSON Schema (draft 07) of the router's configuration file (kvroute serve --config).
Editors validate a fleet file against it when the file names it: "$schema": "<path>/config.schema.json".
`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(HELP);
    return 0;
  }
  if (argv.length > 0) {
    console.error(`kvroute config-schema: takes no arguments, got ${argv.join(' ')}\n\n${HELP}`);
    return 2;
  }
  process.stdout.write(configJsonSchemaText());
  return 0;
}
