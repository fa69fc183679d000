import { z } from 'zod';

/**
 * The configuration reference read out of an env schema (`pnpm docs:config` renders it into
 * docs/configuration.md and docs/distributed.md): the docs say what the parser does because
 * both come from the same schema. A variable documents itself with
 * `.meta({ description, whenUnset? })` on its outermost schema.
 */
export interface EnvVariable {
  name: string;
  /** Markdown: what the variable means. */
  description: string;
  /** What leaving it unset does: the schema's default, a documented `whenUnset`, or nothing (optional). */
  unset:
    | { kind: 'default'; value: string }
    /** Markdown, for what the schema cannot show: a default resolved after parsing, or one computed per process. */
    | { kind: 'documented'; text: string }
    | { kind: 'optional' }
    | { kind: 'required' };
}

const META_KEYS: ReadonlySet<string> = new Set(['description', 'whenUnset']);

/** The variables of an env schema, in the order of its shape; throws naming a variable without a description. */
export function envVariablesOf(schema: z.ZodType): EnvVariable[] {
  return Object.entries(shapeOf(schema)).map(([name, field]) => {
    const meta = field.meta() ?? {};
    const unknown = Object.keys(meta).filter((key) => !META_KEYS.has(key));
    if (unknown.length > 0) throw new Error(`${name}: unknown .meta() key ${unknown.join(', ')} (a variable has a description and maybe whenUnset)`);
    const { description, whenUnset } = meta;
    if (typeof description !== 'string' || description.trim() === '') throw new Error(`${name} has no description: add .meta({ description: '…' }) to its schema`);
    if (whenUnset !== undefined && typeof whenUnset !== 'string') throw new Error(`${name}: whenUnset must be text`);
    return { name, description, unset: unsetOf(name, field, whenUnset) };
  });
}

/** Whether an env schema reads `name` (a service's schema composed of `With…` parts). */
export function readsVariable(schema: z.ZodType, name: string): boolean {
  return Object.hasOwn(shapeOf(schema), name);
}

/** An object schema's shape, through the refinements and transforms around it. */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> {
  if (schema instanceof z.ZodObject) return schema.shape as Record<string, z.ZodType>;
  if (schema instanceof z.ZodPipe) return shapeOf(schema.in as z.ZodType);
  throw new Error(`not an object schema (${schema.def.type}): an env schema is z.object(...), refined or transformed`);
}

function unsetOf(name: string, field: z.ZodType, whenUnset: string | undefined): EnvVariable['unset'] {
  if (whenUnset !== undefined) return { kind: 'documented', text: whenUnset };
  const fallback = defaultOf(field);
  if (fallback !== undefined) {
    // Defaults are what a user would write (`30s`, `1d,7d`), never an object the docs would print as [object Object].
    if (typeof fallback.value !== 'string' && typeof fallback.value !== 'number' && typeof fallback.value !== 'boolean') {
      throw new Error(`${name}: a default of type ${typeof fallback.value} has no text; document it with whenUnset`);
    }
    return { kind: 'default', value: String(fallback.value) };
  }
  return field.safeParse(undefined).success ? { kind: 'optional' } : { kind: 'required' };
}

/** The default of a variable's schema: on the input side of its pipes (`integer`, `duration`). */
function defaultOf(field: z.ZodType): { value: unknown } | undefined {
  if (field instanceof z.ZodDefault) return { value: field.def.defaultValue };
  if (field instanceof z.ZodPipe) return defaultOf(field.in as z.ZodType);
  return undefined;
}
