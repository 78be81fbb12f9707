// Small builders the schema files share: a setting's `kvroute serve` flag and a non-empty string.
import { Type } from '@sinclair/typebox';
import type { Annotations, FlagAnnotation } from './declare.js';

export const cli = (flag: FlagAnnotation): Annotations => ({ cli: flag });
export const text = (options: Record<string, unknown> = {}) => Type.String({ minLength: 1, ...options });
