import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { envVariablesOf } from './env-reference.ts';
import { duration, integer } from './primitives.ts';

describe('envVariablesOf', () => {
  it('reads each variable with its description and what leaving it unset does, in shape order', () => {
    const schema = z.object({
      B_TIMEOUT: duration('30s', true).meta({ description: 'a timeout' }),
      A_PORT: integer(8080, 0, 65535).meta({ description: 'a port' }),
      C_URL: z.string().url().meta({ description: 'an engine' }),
      D_DIR: z.string().optional().meta({ description: 'a directory' }),
      E_ID: z.string().default('host-1234').meta({ description: 'an id', whenUnset: '`<hostname>-<pid>`' }),
      F_COUNT: z.coerce.number().default(256).meta({ description: 'a count' }),
    });
    expect(envVariablesOf(schema)).toEqual([
      { name: 'B_TIMEOUT', description: 'a timeout', unset: { kind: 'default', value: '30s' } },
      { name: 'A_PORT', description: 'a port', unset: { kind: 'default', value: '8080' } },
      { name: 'C_URL', description: 'an engine', unset: { kind: 'required' } },
      { name: 'D_DIR', description: 'a directory', unset: { kind: 'optional' } },
      { name: 'E_ID', description: 'an id', unset: { kind: 'documented', text: '`<hostname>-<pid>`' } },
      { name: 'F_COUNT', description: 'a count', unset: { kind: 'default', value: '256' } },
    ]);
  });

  it('reads through the refinements and transforms around the object', () => {
    const schema = z.object({ A: z.string().default('x').meta({ description: 'a' }) })
      .refine((e) => e.A !== 'y')
      .transform((e) => ({ ...e, B: 1 }));
    expect(envVariablesOf(schema).map((v) => v.name)).toEqual(['A']);
  });

  it('refuses a variable without a description, naming it', () => {
    expect(() => envVariablesOf(z.object({ UNDOCUMENTED: z.string() }))).toThrow(/UNDOCUMENTED has no description/);
  });

  it('refuses a misspelt metadata key rather than drop what it says', () => {
    expect(() => envVariablesOf(z.object({ A: z.string().optional().meta({ description: 'a', whenunset: 'x' }) }))).toThrow(/unknown \.meta\(\) key whenunset/);
  });

  it('refuses a default the docs could only print as [object Object]', () => {
    expect(() => envVariablesOf(z.object({ A: z.object({}).default({}).meta({ description: 'a' }) }))).toThrow(/A: a default of type object/);
  });
});
