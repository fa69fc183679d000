import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { trustedServiceAddress, UnprovenServiceError, type ServiceAddress } from '@gm/config';

const USAGE = `memctl — command line for governed memory

  memctl capability issue --tenant T --agent A --scope KIND:ID [--scope ...] --purpose P --actions a,b,c
                          [--principal ID --principal-kind person|team|service|agent] [--run R] [--ttl SECONDS]
  memctl write   --subject S --resource KIND:ID --kind fact|preference|skill|working_note --content TEXT
                 [--trust trusted|untrusted] [--id ID] [--supersedes ID] [--expires-at ISO] [--visibility team|private]
                 [--confidence 0..1] [--source user|tool|review|import] [--idempotency-key K]
  memctl search  --query TEXT [--subject S] [--limit N] [--budget TOKENS]
  memctl promote --id ID --expected-version N
  memctl forget  --subject S
  memctl job     --id JOB_ID
  memctl receipt get --job JOB_ID [--out FILE] [--json]
                 the job's signed receipt (compact JWS; stdout without --out); --json: the route's JSON answer,
                 with the openings of its content commitments when the token's principal requested the job
  memctl receipt verify FILE [--key JWK_OR_JWKS_FILE_OR_URL] [--content-file F [--record ID] [--opening HEX]]
                 verifies a receipt offline (signature, header, payload shape), prints its summary;
                 exit 1 if it does not verify. Key: --key, else <data-dir>/keys/receipt-signing.public.jwk.json,
                 else <url>/v1/receipt-keys. --content-file: also checks that the record's commitment opens to
                 exactly that file's bytes, with --opening or the openings of a --json FILE (exit 1 if not)
  memctl replay  [--data-dir DIR]      rebuild projections from the logs (service stopped) and compare digests
  memctl receipt-key rotate [--file KEY_FILE]
                 a new receipt signing key in <data-dir>/keys/receipt-signing.jwk.json (or KEY_FILE, the
                 receipt-verifier's MEMORY_RECEIPT_KEY_FILE); the old public key stays published, so old
                 receipts keep verifying. Takes effect when the runtime (the receipt-verifier) restarts

Administration (a capability with "admin"; see docs/api.md):
  memctl grant add --principal ID [--principal-kind KIND] --resource KIND:ID --role member|reviewer|manager|admin
                   --purposes a,b [--restricted confidential,restricted] [--not-before ISO] [--not-after ISO]
                   (prints the grant's id, which the server assigns; adding the same grant again prints the same id)
  memctl grant remove --id GRANT_ID
  memctl delegation add --agent A --scope KIND:ID [--scope ...] --purposes a,b --actions a,b [--not-after ISO] [--id ID]
                        (the delegator is the token's principal)
  memctl delegation revoke --id DELEGATION_ID
  memctl capability revoke JTI          (action "revoke", or one of the caller's own capabilities)
  memctl agent revoke AGENT_ID
  memctl hold add --subject S --reason TEXT [--id HOLD_ID]
  memctl hold list
  memctl hold remove --id HOLD_ID

Common: --url (MEMORY_URL; else the address of the runtime running on the data directory; else
        http://127.0.0.1:8080, or MEMORY_PORT's, once the server there proves it is that directory's
        runtime — nothing secret is sent before; exit 2 if it cannot), --token (MEMORY_TOKEN),
        --data-dir (MEMORY_DATA_DIR, default .data; where the issuer credential and the running
        runtime's address are read from).`;

const options = {
  url: { type: 'string' }, token: { type: 'string' }, 'data-dir': { type: 'string' },
  tenant: { type: 'string' }, agent: { type: 'string' }, scope: { type: 'string', multiple: true }, purpose: { type: 'string' },
  actions: { type: 'string' }, principal: { type: 'string' }, 'principal-kind': { type: 'string' }, run: { type: 'string' },
  ttl: { type: 'string' }, subject: { type: 'string' }, resource: { type: 'string' }, kind: { type: 'string' },
  content: { type: 'string' }, trust: { type: 'string' }, id: { type: 'string' }, supersedes: { type: 'string' },
  'expires-at': { type: 'string' }, visibility: { type: 'string' }, confidence: { type: 'string' }, source: { type: 'string' },
  'idempotency-key': { type: 'string' }, query: { type: 'string' }, limit: { type: 'string' }, budget: { type: 'string' },
  'expected-version': { type: 'string' }, role: { type: 'string' }, purposes: { type: 'string' }, restricted: { type: 'string' },
  'not-before': { type: 'string' }, 'not-after': { type: 'string' }, reason: { type: 'string' },
  job: { type: 'string' }, out: { type: 'string' }, key: { type: 'string' }, file: { type: 'string' }, help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' }, 'content-file': { type: 'string' }, opening: { type: 'string' }, record: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

class UsageError extends Error {}

function need(values: Values, name: keyof Values): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

function resourceRef(text: string): { kind: string; id: string } {
  const [kind, ...rest] = text.split(':');
  if (!kind || rest.length === 0) throw new UsageError(`"${text}" is not KIND:ID (e.g. project:maple)`);
  return { kind, id: rest.join(':') };
}

const optional = <T>(value: T | undefined, key: string) => (value === undefined ? {} : { [key]: value });

const dataDirOf = (values: Values): string => path.resolve(values['data-dir'] ?? process.env.MEMORY_DATA_DIR ?? '.data');

let address: Promise<ServiceAddress> | undefined;

/**
 * The service's address, and the setting that chose it: a failure to reach it names both. An
 * address nobody configured is used only once the server there proved it is the runtime of the
 * data directory (design §9.2): the issuer credential and capabilities go to no one else.
 */
async function serviceUrl(values: Values): Promise<{ base: string; from: string }> {
  address ??= trustedServiceAddress([['--url', values.url], ['MEMORY_URL', process.env.MEMORY_URL]], dataDirOf(values), process.env.MEMORY_PORT);
  const { url, from } = await address;
  return { base: url, from };
}

/** fetch, whose failure to get any answer says where it tried, why, and which setting chose the address. */
async function reach(values: Values, route: string, init: RequestInit): Promise<Response> {
  const { base, from } = await serviceUrl(values);
  try {
    return await fetch(`${base}${route}`, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`cannot reach ${base} (${from}): ${cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))}`);
  }
}

async function call(values: Values, method: string, route: string, body?: unknown, auth?: string, headers: Record<string, string> = {}): Promise<unknown> {
  const token = auth ?? values.token ?? process.env.MEMORY_TOKEN;
  if (!token) throw new UsageError('--token (or MEMORY_TOKEN) is required');
  const response = await reach(values, route, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) {
    process.stderr.write(`${response.status} ${text}\n`);
    process.exit(1);
  }
  return text === '' ? null : JSON.parse(text);
}

async function callText(values: Values, route: string, headers: Record<string, string>): Promise<string> {
  const token = values.token ?? process.env.MEMORY_TOKEN;
  if (!token) throw new UsageError('--token (or MEMORY_TOKEN) is required');
  const response = await reach(values, route, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const text = await response.text();
  if (!response.ok) {
    process.stderr.write(`${response.status} ${text}\n`);
    process.exit(1);
  }
  return text.trim();
}

/** A JWK or a JWKS (`{keys: [...]}`), from a file or a URL. */
async function loadKeys(source: string): Promise<Array<Record<string, string | undefined>>> {
  const text = /^https?:\/\//.test(source) ? await (await fetch(source)).text() : readFileSync(source, 'utf8');
  const parsed = JSON.parse(text) as { keys?: Array<Record<string, string | undefined>> } & Record<string, string | undefined>;
  return Array.isArray(parsed.keys) ? parsed.keys : [parsed];
}

/** Offline verification of a receipt file: no capability, no server (unless the key is a URL). */
async function verifyReceiptFile(values: Values, file: string, dataDir: string): Promise<void> {
  // Loaded only here: jose and the receipt schema, not the runtime.
  const { verifyReceipt } = await import('@gm/policy/receipts');
  const localKey = path.join(dataDir, 'keys', 'receipt-signing.public.jwk.json');
  const keySource = values.key ?? (existsSync(localKey) ? localKey : `${(await serviceUrl(values)).base}/v1/receipt-keys`);
  const text = readFileSync(file, 'utf8').trim();
  // Accepts the bare JWS (receipt get, application/jose) or the JSON answer `{receipt, payload, openings?}`.
  const answer = text.startsWith('{') ? (JSON.parse(text) as { receipt?: unknown; openings?: unknown }) : undefined;
  const jws = answer === undefined ? text : String(answer.receipt ?? '');
  try {
    const { payload: r, kid } = await verifyReceipt(jws, await loadKeys(keySource));
    const records = r.contentCommitments
      ? r.contentCommitments.map((c) => `${c.recordId}${c.commitment ? '' : ' (no commitment)'}`)
      : (r.contentHashes ?? []).map((h) => `${h.recordId}=${h.sha256 ? h.sha256.slice(0, 12) : '?'}`);
    process.stdout.write(
      [
        `signature:   valid (Ed25519, kid ${kid ?? '-'}, key from ${keySource})`,
        `receipt:     ${r.receiptId} for job ${r.jobId} (tenant ${r.tenant}, ${r.mode}${r.subjectId ? ` of subject ${r.subjectId}` : ''})`,
        `status:      ${r.status}${r.failureReason ? ` — ${r.failureReason}` : ''}`,
        `retention:   ${r.retention}${r.retentionReason ? ` — ${r.retentionReason}` : ''}`,
        `records:     ${r.recordIds.length} (${records.join(', ')})`,
        `targets:     ${r.targets.map((t) => `${t.target}:${t.status}`).join(', ')}`,
        `replay:      ${r.replay.probes ?? '?'} probes, ${r.replay.findings.length} findings, ${r.replay.attempts} attempt(s)`,
        `requested:   ${r.requestedAt} by ${r.requestedBy.agentId} for ${r.requestedBy.principalId}; completed ${r.completedAt}`,
        `event log:   ${r.eventLog.holdsContent ? 'STILL HOLDS the content' : 'ciphertext only, its keys destroyed'} — ${r.eventLog.note}`,
        '',
      ].join('\n'),
    );
  } catch (err) {
    process.stderr.write(`receipt does NOT verify: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
    return;
  }
  const contentFile = values['content-file'];
  if (contentFile !== undefined) await checkContent(values, contentFile, jws, answer?.openings);
}

/**
 * The requester's check (design §8.4): the receipt's commitment for one record opens, with its
 * opening, to exactly the bytes of the content file. Run after the signature verified.
 */
async function checkContent(values: Values, contentFile: string, jws: string, openings: unknown): Promise<void> {
  if (values.opening !== undefined && !/^[0-9a-f]{64}$/.test(values.opening)) throw new UsageError('--opening is 64 hex digits');
  const { decodeReceiptPayload } = await import('@gm/policy/receipts');
  const { opensTo } = await import('@gm/policy/receipt-commitments');
  const { DeletionReceipt, ContentOpening } = await import('@gm/contracts');
  const payload = DeletionReceipt.parse(decodeReceiptPayload(jws));
  const commitments = payload.contentCommitments ?? [];
  const recordId = values.record ?? (commitments.length === 1 ? commitments[0]?.recordId : undefined);
  if (recordId === undefined) throw new UsageError('--record is required: the receipt covers several records');
  const commitment = commitments.find((c) => c.recordId === recordId)?.commitment;
  const opening = values.opening
    ?? ContentOpening.array().catch([]).parse(openings).find((o) => o.recordId === recordId)?.opening;
  if (commitment === undefined || commitment === null) {
    process.stderr.write(`content:     the receipt holds no commitment for record ${recordId}\n`);
    process.exitCode = 1;
  } else if (opening === undefined) {
    process.stderr.write(`content:     no opening for record ${recordId}: --opening, or the file from \`receipt get --json\` by the requester\n`);
    process.exitCode = 1;
  } else if (opensTo(commitment, opening, readFileSync(contentFile))) {
    process.stdout.write(`content:     matches the commitment of record ${recordId}\n`);
  } else {
    process.stderr.write(`content:     does NOT match the commitment of record ${recordId}\n`);
    process.exitCode = 1;
  }
}

const list = (text: string) => text.split(',').map((a) => a.trim()).filter(Boolean);
const path1 = (id: string) => encodeURIComponent(id);

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true });
  const [command, sub, arg] = positionals;
  const target = (what: string): string => {
    if (!arg) throw new UsageError(`${what} is required`);
    return arg;
  };
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const dataDir = dataDirOf(values);
  switch (command) {
    case 'capability': {
      if (sub === 'revoke') {
        print(await call(values, 'POST', `/v1/capabilities/${path1(target('the capability id (jti)'))}/revoke`, {}));
        return;
      }
      if (sub !== 'issue') throw new UsageError('did you mean: memctl capability issue|revoke');
      const credential = process.env.MEMORY_ISSUER_CREDENTIAL ?? readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
      const body = {
        tenant: need(values, 'tenant'),
        agentId: need(values, 'agent'),
        scopes: (values.scope ?? []).map(resourceRef),
        purpose: need(values, 'purpose'),
        actions: list(need(values, 'actions')),
        ...optional(values.principal === undefined ? undefined : { id: values.principal, kind: values['principal-kind'] ?? 'person' }, 'principal'),
        ...optional(values.run, 'run'),
        ...optional(values.ttl === undefined ? undefined : Number(values.ttl), 'ttlSeconds'),
      };
      const issued = (await call(values, 'POST', '/v1/capabilities', body, credential)) as { token: string; expiresAt: string; jti: string };
      process.stderr.write(`expires at ${issued.expiresAt} (jti ${issued.jti})\n`);
      process.stdout.write(`${issued.token}\n`);
      return;
    }
    case 'write': {
      const body = {
        subjectId: need(values, 'subject'),
        resource: resourceRef(need(values, 'resource')),
        kind: need(values, 'kind'),
        content: need(values, 'content'),
        trust: values.trust ?? 'untrusted',
        provenance: [{ source: values.source ?? 'user', observedAt: new Date().toISOString() }],
        ...optional(values.id, 'id'),
        ...optional(values.supersedes, 'supersedesId'),
        ...optional(values['expires-at'], 'expiresAt'),
        ...optional(values.visibility, 'visibility'),
        ...optional(values.confidence === undefined ? undefined : Number(values.confidence), 'confidence'),
      };
      const key = values['idempotency-key'];
      print(await call(values, 'POST', '/v1/memories', body, undefined, key ? { 'idempotency-key': key } : {}));
      return;
    }
    case 'search':
      print(
        await call(values, 'POST', '/v1/search', {
          query: need(values, 'query'),
          ...optional(values.subject, 'subjectId'),
          ...optional(values.limit === undefined ? undefined : Number(values.limit), 'limit'),
          ...optional(values.budget === undefined ? undefined : Number(values.budget), 'tokenBudget'),
        }),
      );
      return;
    case 'promote':
      print(await call(values, 'POST', `/v1/memories/${encodeURIComponent(need(values, 'id'))}/promote`, { expectedVersion: Number(need(values, 'expected-version')) }));
      return;
    case 'forget':
      print(await call(values, 'POST', `/v1/subjects/${encodeURIComponent(need(values, 'subject'))}/forget`, {}));
      return;
    case 'job':
      print(await call(values, 'GET', `/v1/deletion-jobs/${encodeURIComponent(need(values, 'id'))}`));
      return;
    case 'receipt':
      if (sub === 'get') {
        const route = `/v1/deletion-jobs/${path1(need(values, 'job'))}/receipt`;
        const jws = values.json
          ? JSON.stringify(await call(values, 'GET', route), null, 2)
          : await callText(values, route, { accept: 'application/jose' });
        if (values.out) {
          // With --json it may hold the openings: the requester's alone.
          writeFileSync(values.out, `${jws}\n`, { mode: 0o600 });
          process.stderr.write(`receipt written to ${values.out}\n`);
        } else process.stdout.write(`${jws}\n`);
        return;
      }
      if (sub === 'verify') {
        await verifyReceiptFile(values, target('the receipt file'), dataDir);
        return;
      }
      throw new UsageError('did you mean: memctl receipt get|verify');
    case 'grant':
      if (sub === 'add') {
        if (values.id !== undefined) throw new UsageError('grant ids are assigned by the server (docs/security.md#the-administration-plane): leave out --id; the answer names the id');
        print(
          await call(values, 'POST', '/v1/grants', {
            principal: { id: need(values, 'principal'), kind: values['principal-kind'] ?? 'person' },
            resource: resourceRef(need(values, 'resource')),
            role: need(values, 'role'),
            purposes: list(need(values, 'purposes')),
            ...optional(values.restricted === undefined ? undefined : list(values.restricted), 'restricted'),
            ...optional(values['not-before'], 'notBefore'),
            ...optional(values['not-after'], 'notAfter'),
          }),
        );
        return;
      }
      if (sub === 'remove') {
        print(await call(values, 'DELETE', `/v1/grants/${path1(need(values, 'id'))}`));
        return;
      }
      throw new UsageError('did you mean: memctl grant add|remove');
    case 'delegation':
      if (sub === 'add') {
        print(
          await call(values, 'POST', '/v1/delegations', {
            agentId: need(values, 'agent'),
            resources: (values.scope ?? []).map(resourceRef),
            purposes: list(need(values, 'purposes')),
            actions: list(need(values, 'actions')),
            ...optional(values['not-after'], 'notAfter'),
            ...optional(values.id, 'delegationId'),
          }),
        );
        return;
      }
      if (sub === 'revoke') {
        print(await call(values, 'POST', `/v1/delegations/${path1(need(values, 'id'))}/revoke`, {}));
        return;
      }
      throw new UsageError('did you mean: memctl delegation add|revoke');
    case 'agent':
      if (sub !== 'revoke') throw new UsageError('did you mean: memctl agent revoke AGENT_ID');
      print(await call(values, 'POST', `/v1/agents/${path1(target('the agent id'))}/revoke`, {}));
      return;
    case 'hold':
      if (sub === 'add') {
        print(await call(values, 'POST', '/v1/legal-holds', { subjectId: need(values, 'subject'), reason: need(values, 'reason'), ...optional(values.id, 'holdId') }));
        return;
      }
      if (sub === 'list') {
        print(await call(values, 'GET', '/v1/legal-holds'));
        return;
      }
      if (sub === 'remove') {
        print(await call(values, 'DELETE', `/v1/legal-holds/${path1(need(values, 'id'))}`));
        return;
      }
      throw new UsageError('did you mean: memctl hold add|list|remove');
    case 'receipt-key': {
      if (sub !== 'rotate') throw new UsageError('did you mean: memctl receipt-key rotate');
      // Loaded only here: jose, not the runtime.
      const { rotateReceiptKeyFile } = await import('@gm/policy/receipt-keys');
      const file = path.resolve(values.file ?? path.join(dataDir, 'keys', 'receipt-signing.jwk.json'));
      if (!existsSync(file)) throw new UsageError(`${file} does not exist (--file names the receipt key file)`);
      // The public half beside it (the embedded data directory's) becomes the JWKS of every key.
      const publicFile = file.endsWith('.jwk.json') ? file.replace(/\.jwk\.json$/, '.public.jwk.json') : undefined;
      const outcome = await rotateReceiptKeyFile(file, publicFile !== undefined && existsSync(publicFile) ? publicFile : undefined);
      process.stdout.write(
        [
          `receipt key rotated in ${file}`,
          `signs from the next start:  kid ${outcome.kid}`,
          `still published (old receipts verify): ${outcome.retiredKids.map((k) => `kid ${k}`).join(', ')}`,
          'restart the runtime (distributed: the receipt-verifier) to sign with the new key',
          '',
        ].join('\n'),
      );
      return;
    }
    case 'replay': {
      // Loaded only here: the runtime's modules make every other command slow to start.
      const { loadConfig, masterKeyEnvOf, replayDataDir } = await import('@gm/embedded');
      const config = loadConfig({ ...process.env, MEMORY_DATA_DIR: dataDir });
      process.stderr.write(`replaying ${dataDir} ...\n`);
      const started = performance.now();
      const report = await replayDataDir(dataDir, config.partitions, (n) => process.stderr.write(`  ${n} events folded\n`), undefined, masterKeyEnvOf(config));
      process.stdout.write(
        [
          `events replayed:   ${report.events} (+ ${report.policyChanges} policy changes) in ${Math.round(performance.now() - started)} ms`,
          `projection digest: ${report.before.projection} -> ${report.after.projection}`,
          `index digest:      ${report.before.index} -> ${report.after.index}`,
          report.identical ? 'identical: the projections are a pure fold of the log' : 'DIFFERENT: the projections had drifted from the log (now rebuilt)',
          '',
        ].join('\n'),
      );
      if (!report.identical) process.exitCode = 1;
      return;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

run(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  // No runtime proved itself at the default address: one line, what to set, and exit 2 as for a bad setting.
  if (err instanceof UnprovenServiceError) {
    process.stderr.write(`memctl: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`memctl: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
