// Loads the Rust addon. This is the only module that touches the raw binding; the classes in
// src/core wrap it with argument checks and JavaScript error types.
import { createRequire } from 'node:module';
import type * as Binding from '../../native/binding.js';

const require = createRequire(import.meta.url);

// Same relative path from src/core (tests, tsx) and dist/core (the built package).
export const native: typeof Binding = require('../../native/kvroute.node');
export type { Binding };
