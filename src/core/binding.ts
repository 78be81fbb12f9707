// The Rust addon. This is the only module of the main thread that touches the raw binding; the
// classes in src/core wrap it with argument checks and JavaScript error types. Which file is
// loaded (a local build or this platform's prebuilt package) is native-loader.mjs's business.
import type * as Binding from '../../native/binding.js';
import { loadNative } from './native-loader.mjs';

export const native = loadNative().binding as typeof Binding;
export type { Binding };
