import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';

/** Where the repository's own policy set lives; deployments may ship another directory. */
export const DEFAULT_POLICY_DIR = fileURLToPath(new URL('../../policies/', import.meta.url));

/** Policy set and schema as text, plus the file names used in error messages. */
export interface PolicySetText {
  policies: string;
  /** Cedar schema text, or the JSON schema format as a parsed object. */
  schema: string | cedar.SchemaJson<string>;
  policiesOrigin?: string;
  schemaOrigin?: string;
}

/** A policy set that parsed and validated against its schema, preparsed in cedar-wasm. */
export interface CompiledPolicySet {
  /** Content hash: the handle of the preparsed policy set and schema inside cedar-wasm. */
  readonly id: string;
  readonly schemaName: string;
  /** Policy ids (their `@id` annotation, else Cedar's `policyN`) in source order. */
  readonly policyIds: readonly string[];
}

export interface PolicySetProblem {
  /** `@id` of the policy at fault, if the problem is in one policy. */
  policyId?: string;
  /** `file:line:column` of the problem, if Cedar located it. */
  location?: string;
  message: string;
}

/**
 * A policy set or schema that does not parse or validate. Services exit on it at start
 * (fail fast) — the message names each policy and what is wrong.
 */
export class PolicySetError extends Error {
  constructor(readonly problems: PolicySetProblem[]) {
    super(`invalid Cedar policy set:\n${problems.map(describe).join('\n')}`);
    this.name = 'PolicySetError';
  }
}

const describe = (p: PolicySetProblem): string =>
  `  ${p.location ?? '?'}${p.policyId === undefined ? '' : ` policy "${p.policyId}"`}: ${p.message}`;

/**
 * Reads `schema.cedarschema` (or `schema.cedarschema.json`) and `default.cedar` from `dir`,
 * validates the policies against the schema and preparses both. Throws PolicySetError.
 */
export function loadPolicySet(dir: string = DEFAULT_POLICY_DIR): CompiledPolicySet {
  const policiesOrigin = join(dir, 'default.cedar');
  const textSchema = join(dir, 'schema.cedarschema');
  const jsonSchema = join(dir, 'schema.cedarschema.json');
  const schemaOrigin = existsSync(textSchema) ? textSchema : jsonSchema;
  for (const file of [policiesOrigin, schemaOrigin]) {
    if (!existsSync(file)) throw new PolicySetError([{ location: file, message: 'file not found' }]);
  }
  const schemaText = readFileSync(schemaOrigin, 'utf8');
  let schema: PolicySetText['schema'] = schemaText;
  if (schemaOrigin === jsonSchema) {
    try {
      schema = JSON.parse(schemaText) as cedar.SchemaJson<string>;
    } catch (err) {
      throw new PolicySetError([{ location: schemaOrigin, message: `not JSON: ${(err as Error).message}` }]);
    }
  }
  return compilePolicySet({ policies: readFileSync(policiesOrigin, 'utf8'), schema, policiesOrigin, schemaOrigin });
}

/** Validates policies against the schema (strict mode) and preparses both once per content. */
export function compilePolicySet(input: PolicySetText): CompiledPolicySet {
  const policiesOrigin = input.policiesOrigin ?? 'policies';
  const schemaOrigin = input.schemaOrigin ?? 'schema';
  const schemaText = typeof input.schema === 'string' ? input.schema : undefined;

  const schemaParse = cedar.checkParseSchema(input.schema);
  if (schemaParse.type === 'failure') {
    throw new PolicySetError(schemaParse.errors.map((e) => problem(e, schemaOrigin, schemaText)));
  }
  const parts = cedar.policySetTextToParts(input.policies);
  if (parts.type === 'failure') {
    throw new PolicySetError(parts.errors.map((e) => problem(e, policiesOrigin, input.policies)));
  }
  const spans = policySpans(input.policies, parts.policies, parts.policy_templates);

  const answer = cedar.validate({ schema: input.schema, policies: { staticPolicies: input.policies }, validationSettings: { mode: 'strict' } });
  if (answer.type === 'failure') {
    throw new PolicySetError(answer.errors.map((e) => problem(e, policiesOrigin, input.policies)));
  }
  if (answer.validationErrors.length > 0) {
    throw new PolicySetError(
      unique(answer.validationErrors.map((v) => {
        const found = problem(v.error, policiesOrigin, input.policies);
        const message = found.message
          .replace(/^for policy `policy\d+`[:,]\s*/, '')
          .replace(/`(policy\d+)`/g, (_, cedarId: string) => `"${spans.idOf(cedarId)}"`)
          // The validator repeats a context problem once per action; once is enough.
          .replace(/ for Action::"[^"]*"/, '');
        return { ...found, message, policyId: spans.idOf(v.policyId) };
      })),
    );
  }
  if (parts.policy_templates.length > 0) {
    throw new PolicySetError([{ location: policiesOrigin, message: 'templates are not supported: grants are data, not template links' }]);
  }

  const byId: Record<string, string> = {};
  for (const span of spans.ordered) {
    if (byId[span.id] !== undefined) {
      throw new PolicySetError([{ location: locate(policiesOrigin, input.policies, span.start), policyId: span.id, message: 'duplicate @id' }]);
    }
    byId[span.id] = span.text;
  }

  const hash = createHash('sha256').update(input.policies).update('\0').update(JSON.stringify(input.schema)).digest('hex').slice(0, 16);
  const id = `gm-policies-${hash}`;
  const schemaName = `gm-schema-${hash}`;
  // Preparsed sets live in cedar-wasm's own storage under these names; same content, same name.
  const preparsed = [cedar.preparsePolicySet(id, { staticPolicies: byId }), cedar.preparseSchema(schemaName, input.schema)];
  for (const p of preparsed) {
    if (p.type === 'failure') throw new PolicySetError(p.errors.map((e) => problem(e, policiesOrigin, undefined)));
  }
  return { id, schemaName, policyIds: spans.ordered.map((s) => s.id) };
}

const unique = (problems: PolicySetProblem[]): PolicySetProblem[] =>
  [...new Map(problems.map((p) => [describe(p), p])).values()];

interface Span { id: string; text: string; start: number }

/**
 * Cedar names the policies of a text set `policy0…policyN` in source order; we name them by
 * their `@id` annotation so that errors and diagnostics say which rule is meant.
 */
function policySpans(source: string, policies: string[], templates: string[]): { ordered: Span[]; idOf: (cedarId: string) => string } {
  const located = [...policies, ...templates]
    .map((text) => ({ text, start: source.indexOf(text) }))
    .sort((a, b) => a.start - b.start);
  const ordered = located.map(({ text, start }, n) => ({ id: annotatedId(text) ?? `policy${n}`, text, start }));
  const idOf = (cedarId: string): string => {
    const n = /^policy(\d+)$/.exec(cedarId)?.[1];
    return (n === undefined ? undefined : ordered[Number(n)]?.id) ?? cedarId;
  };
  return { ordered, idOf };
}

function annotatedId(policyText: string): string | undefined {
  const json = cedar.policyToJson(policyText);
  if (json.type === 'failure') return undefined;
  return json.json.annotations?.['id'];
}

function problem(e: cedar.DetailedError, origin: string, text: string | undefined): PolicySetProblem {
  const at = e.sourceLocations?.[0]?.start;
  const help = e.help === null || e.help === undefined ? '' : ` (${e.help})`;
  const label = e.sourceLocations?.[0]?.label;
  const expected = label === null || label === undefined ? '' : `; ${label}`;
  return { location: at === undefined || text === undefined ? origin : locate(origin, text, at), message: `${e.message}${expected}${help}` };
}

/** Cedar reports byte offsets; policy files are mostly ASCII, but convert properly anyway. */
function locate(origin: string, text: string, byteOffset: number): string {
  const prefix = Buffer.from(text, 'utf8').subarray(0, byteOffset).toString('utf8');
  const lines = prefix.split('\n');
  return `${origin}:${lines.length}:${(lines.at(-1)?.length ?? 0) + 1}`;
}
