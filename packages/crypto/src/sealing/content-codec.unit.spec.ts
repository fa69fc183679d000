/**
 * The content codec: what memory.commands and memory.events carry in place of content (an
 * envelope), and what each kind of service reads back (plaintext, ERASED_CONTENT once a key is
 * destroyed, SEALED_CONTENT without keys). Key stores are SQLite `:memory:`, one per test.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { OutgoingMessage } from '@gm/bus';
import {
  ERASED_CONTENT, ERASED_CONTENT_HASH, MemoryCommand, MemoryEvent, MemoryPromoted, MemoryWritten, SEALED_CONTENT, Sha256Hex, TOPICS,
  type EventOf,
} from '@gm/contracts';
import { createSqliteKeyStore } from '../embedded/sqlite-key-store.ts';
import { Envelope, encryptContent } from '../envelope.ts';
import type { KeyStore } from '../key-store.ts';
import { openKeyring, type Keyring } from '../keyring.ts';
import { masterKeys, type MasterKeys } from '../master-keys.ts';
import { ContentCodec, SEALED_HASHES_FIELD, SEALED_TOPIC_TYPES } from './content-codec.ts';
import { ACTOR, FINGERPRINT, HASH, SUBJECT, T0, TENANT, commandContent, commandMetadata, writeCommand as fixtureCommand, writtenContent } from './fixtures.ts';
import { sweepTransitKeys, transitKeyId } from './transit.ts';

const A = randomBytes(32);
const B = randomBytes(32);
const onlyA = masterKeys('A', new Map([['A', A]]));
const onlyB = masterKeys('B', new Map([['B', B]]));
const bothActiveB = masterKeys('B', new Map([['A', A], ['B', B]]));

const SECRET = 'Alice\'s passport number is X4471-secret';
const metadata = (over: { tenantId?: string; subjectId?: string } = {}) => commandMetadata('cmd-1', over);

const recordMeta = (id: string, version: number, over: { tenantId?: string; subjectId?: string } = {}) => ({
  id, tenantId: over.tenantId ?? TENANT, agentId: ACTOR.agentId, subjectId: over.subjectId ?? SUBJECT,
  owner: { principalId: ACTOR.principalId, kind: 'person' as const }, resource: { kind: 'project' as const, id: 'apollo' },
  visibility: 'private' as const, sensitivity: 'normal' as const, purposes: ['support'], kind: 'fact' as const,
  contentHash: HASH, provenance: [{ source: 'user' as const, observedAt: T0 }], trust: 'trusted' as const, confidence: 0.8,
  createdAt: T0, expiresAt: '2025-04-01T09:00:00.000Z', version, status: 'active' as const, policyRevision: 0,
});

// Every message is parsed with its contract schema, so the codec is tested on real shapes.
const writeCommand = (id: string, content = SECRET, over: { tenantId?: string } = {}): OutgoingMessage => fixtureCommand(id, content, over);

const written = (
  id: string, options: { version?: number; content?: string; keyGeneration?: number; tenantId?: string; subjectId?: string } = {},
): OutgoingMessage => ({
  topic: TOPICS.events,
  key: `${TENANT}/${SUBJECT}`,
  value: MemoryWritten.parse({
    type: 'MemoryWritten',
    data: {
      record: { ...recordMeta(id, options.version ?? 1, options), content: options.content ?? `${SECRET} (${id})` },
      ...(options.keyGeneration === undefined ? {} : { keyGeneration: options.keyGeneration }),
    },
    metadata: { ...metadata(options), eventId: `evt-${id}` },
  }),
});

const promoted = (id: string, version: number, content = `${SECRET} (${id}, promoted)`): OutgoingMessage => ({
  topic: TOPICS.events,
  key: `${TENANT}/${SUBJECT}`,
  value: MemoryPromoted.parse({
    type: 'MemoryPromoted',
    data: { id, version, visibility: 'team', trust: 'verified', record: { ...recordMeta(id, version), visibility: 'team', trust: 'verified' }, content },
    metadata: { ...metadata(), eventId: `evt-${id}-p` },
  }),
});

/** Frozen all the way down: any write to an input throws (ESM is strict mode). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

const promotedContent = (value: unknown): unknown => (value as EventOf<'MemoryPromoted'>).data.content;
type Slot = 'command' | 'written' | 'promoted';
interface Loose { data: { content?: unknown; contentHash?: unknown; record: { content?: unknown; contentHash?: unknown } } & Record<string, unknown>; metadata: { requestHash?: unknown } }
/** The content hash a message carries, wherever its type keeps it. */
const hashOf = (value: unknown, slot: Slot): unknown => (slot === 'command' ? (value as Loose).data.contentHash : (value as Loose).data.record.contentHash);
/**
 * What the log shows of a message once sealed: its envelope where the content was, the erased
 * hash in place of the content's, no request fingerprint.
 */
function onTheLog(value: unknown, slot: Slot, envelope: unknown): unknown {
  const copy = withContent(value, slot, envelope) as Loose;
  if (slot === 'command') copy.data.contentHash = ERASED_CONTENT_HASH;
  else copy.data.record.contentHash = ERASED_CONTENT_HASH;
  delete copy.metadata.requestHash;
  return copy;
}
/** A copy of a command or event value with its content replaced (an envelope moved, garbage put in). */
function withContent(value: unknown, slot: 'command' | 'written' | 'promoted', content: unknown): unknown {
  const copy = structuredClone(value) as { data: { content?: unknown; record: { content?: unknown } } };
  if (slot === 'written') copy.data.record.content = content;
  else copy.data.content = content;
  return copy;
}

async function keyring(keys: MasterKeys = onlyA, store?: KeyStore): Promise<{ keyring: Keyring; store: KeyStore }> {
  const own = store ?? createSqliteKeyStore({ file: ':memory:' });
  if (store === undefined) onTestFinished(() => own.close());
  const ring = await openKeyring({ masterKeys: keys, store: own });
  onTestFinished(() => ring.close());
  return { keyring: ring, store: own };
}

async function openCodec(keys: MasterKeys = onlyA): Promise<{ codec: ContentCodec; keyring: Keyring; store: KeyStore }> {
  const k = await keyring(keys);
  return { ...k, codec: new ContentCodec({ mode: 'open', keyring: k.keyring }) };
}

const reason = (r: string) => expect.objectContaining({ reason: r });
const code = (c: string) => expect.objectContaining({ code: c });

describe('ContentCodec: WriteMemory commands (transit keys)', () => {
  const at = (iso: string) => () => Date.parse(iso);
  const transitCodec = (ring: Keyring, clock = at(T0)) => new ContentCodec({ mode: 'open', keyring: ring, instanceId: 'api-1', clock });

  it('seals the content with the instance’s key of the hour; the rest of the command is untouched; open gives the original back', async () => {
    const { keyring: ring } = await keyring();
    const codec = transitCodec(ring);
    const message = deepFreeze(writeCommand('r1'));
    const original = structuredClone(message);
    const sealed = await codec.seal(message);
    expect(JSON.stringify(sealed)).not.toContain('passport');
    const envelope = Envelope.parse(commandContent(sealed.value));
    expect(envelope.kid).toBe('tk:api-1:2025030109');
    expect(sealed.value).toEqual(onTheLog(original.value, 'command', envelope));
    expect({ ...sealed, value: undefined }).toEqual({ ...original, value: undefined });
    expect(await codec.open(TOPICS.commands, sealed.value)).toEqual(original.value);
    // The input was neither mutated nor reused.
    expect(message).toEqual(original);
    // The next hour gets a key of its own.
    const later = await transitCodec(ring, at('2025-03-01T10:00:00.000Z')).seal(writeCommand('r2'));
    expect(Envelope.parse(commandContent(later.value)).kid).toBe('tk:api-1:2025030110');
  });

  it('another service on the same key store opens it; after a master-key rotation it still opens without the old master key', async () => {
    const { keyring: ring, store } = await keyring(onlyA);
    const sealed = await transitCodec(ring).seal(writeCommand('r1'));
    await expect(openKeyring({ masterKeys: onlyB, store })).rejects.toEqual(reason('MASTER_KEY_MISMATCH'));
    const both = await keyring(bothActiveB, store);
    expect(await both.keyring.rotateMasterKey({ id: 'B', key: B })).toMatchObject({ rewrapped: 2 }); // the transit key and the pseudonym key
    const onlyNew = await keyring(onlyB, store);
    expect(commandContent(await transitCodec(onlyNew.keyring).open(TOPICS.commands, sealed.value))).toBe(SECRET);
  });

  it('a sealed command cannot be moved onto another record id, subject or tenant', async () => {
    const { keyring: ring } = await keyring();
    const codec = transitCodec(ring);
    const sealed = (await codec.seal(writeCommand('r1'))).value;
    const envelope = commandContent(sealed);
    const elsewhere = [
      withContent((await codec.seal(writeCommand('r2', 'other'))).value, 'command', envelope),
      withContent((await codec.seal(writeCommand('r1', 'other', { tenantId: 't2' }))).value, 'command', envelope),
    ];
    const otherSubject = structuredClone(sealed) as { metadata: { subjectId: string } };
    otherSubject.metadata.subjectId = 'bob';
    for (const value of [...elsewhere, otherSubject]) {
      await expect(codec.open(TOPICS.commands, value)).rejects.toEqual(reason('AUTH_FAILED'));
    }
  });

  it('a service without keys can neither seal nor open command content', async () => {
    const { keyring: ring } = await keyring();
    const sealed = await transitCodec(ring).seal(writeCommand('r1'));
    const keyless = new ContentCodec({ mode: 'open' });
    await expect(keyless.seal(writeCommand('r2'))).rejects.toEqual(code('MEM_INTERNAL'));
    await expect(keyless.open(TOPICS.commands, sealed.value)).rejects.toEqual(code('MEM_INTERNAL'));
  });

  it('sweeps a transit key only after its hour and the grace passed and every command was consumed; its commands then read as erased', async () => {
    const { keyring: ring } = await keyring();
    const sealed = await transitCodec(ring).seal(writeCommand('r1'));
    let consumed = false;
    const sweep = (iso: string) => sweepTransitKeys({ keyring: ring, clock: at(iso), consumedAll: async () => consumed });
    // The hour ends at 10:00, the grace at 11:00.
    expect(await sweep('2025-03-01T10:59:59.000Z')).toBe(0);
    expect(await sweep('2025-03-01T11:00:00.000Z')).toBe(0); // write-admission still behind
    consumed = true;
    expect(await sweep('2025-03-01T11:00:00.000Z')).toBe(1);
    expect(await ring.transitKeyIds()).toEqual([]);
    expect(commandContent(await transitCodec(ring).open(TOPICS.commands, sealed.value))).toBe(ERASED_CONTENT);
    // A current key is never swept.
    await transitCodec(ring, at('2025-03-01T11:00:00.000Z')).seal(writeCommand('r2'));
    expect(await sweep('2025-03-01T11:30:00.000Z')).toBe(0);
  });
});

describe('ContentCodec: MemoryWritten / MemoryPromoted events (per-record data keys)', () => {
  it('round-trips both events; a second service on the same key store reads them too', async () => {
    const { codec, store } = await openCodec();
    const messages = [written('r1'), promoted('r1', 2), written('r2', { version: 3 })].map(deepFreeze);
    const originals = messages.map((m) => structuredClone(m));
    const sealed = await Promise.all(messages.map((m) => codec.seal(m)));
    expect(JSON.stringify(sealed)).not.toContain('passport');
    expect(Envelope.parse(writtenContent(sealed[0]?.value)).kid).toBe('dk:t1/r1/1');
    expect(Envelope.parse(promotedContent(sealed[1]?.value)).kid).toBe('dk:t1/r1/1');
    expect(Envelope.parse(writtenContent(sealed[2]?.value)).kid).toBe('dk:t1/r2/1');
    expect(messages).toEqual(originals);

    const other = await keyring(onlyA, store);
    const reader = new ContentCodec({ mode: 'open', keyring: other.keyring });
    for (const [i, s] of sealed.entries()) {
      expect(await codec.open(TOPICS.events, s.value)).toEqual(originals[i]?.value);
      expect(await reader.open(TOPICS.events, s.value)).toEqual(originals[i]?.value);
    }
  });

  it('content of one subject sealed at once (a batch) stays readable: one KEK, one data key per record', async () => {
    // Regression: concurrent first uses each created a KEK / data key and the last put won,
    // leaving the other envelopes unreadable for good.
    const { codec, keyring: ring, store } = await openCodec();
    const batch = [written('r1'), promoted('r1', 2), written('r2'), written('r3'), promoted('r3', 2)];
    const sealed = await Promise.all(batch.map((m) => codec.seal(m)));
    const all = await store.all();
    expect(all.filter((w) => w.kind === 'kek').map((w) => w.kid)).toEqual([ring.subjectKekId(TENANT, SUBJECT, 1)]);
    expect(all.filter((w) => w.kind === 'dk').map((w) => w.kid).sort()).toEqual(['dk:t1/r1/1', 'dk:t1/r2/1', 'dk:t1/r3/1']);
    const reader = new ContentCodec({ mode: 'open', keyring: (await keyring(onlyA, store)).keyring });
    for (const [i, s] of sealed.entries()) {
      expect(await codec.open(TOPICS.events, s.value)).toEqual(batch[i]?.value);
      expect(await reader.open(TOPICS.events, s.value)).toEqual(batch[i]?.value);
    }
  });

  it('an envelope moved onto another record id, version or tenant fails AUTH_FAILED', async () => {
    const { codec } = await openCodec();
    const envelope = writtenContent((await codec.seal(written('r1'))).value);
    const moved = [
      withContent((await codec.seal(written('r2'))).value, 'written', envelope),
      withContent((await codec.seal(written('r1', { version: 2 }))).value, 'written', envelope),
      withContent((await codec.seal(written('r1', { tenantId: 't2' }))).value, 'written', envelope),
      withContent((await codec.seal(written('r1', { subjectId: 'bob' }))).value, 'written', envelope),
      withContent((await codec.seal(promoted('r1', 2))).value, 'promoted', envelope),
    ];
    for (const value of moved) await expect(codec.open(TOPICS.events, value)).rejects.toEqual(reason('AUTH_FAILED'));
  });

  it('a deleted record (data key destroyed) reads as ERASED_CONTENT; its sibling stays readable', async () => {
    const { codec, keyring: ring, store } = await openCodec();
    const [r1, r1p, r2] = await Promise.all([written('r1'), promoted('r1', 2), written('r2')].map((m) => codec.seal(m)));
    await ring.destroyDataKey(TENANT, 'r1');
    const fresh = new ContentCodec({ mode: 'open', keyring: (await keyring(onlyA, store)).keyring });
    for (const c of [codec, fresh]) {
      expect(writtenContent(await c.open(TOPICS.events, r1?.value))).toBe(ERASED_CONTENT);
      expect(promotedContent(await c.open(TOPICS.events, r1p?.value))).toBe(ERASED_CONTENT);
      expect(writtenContent(await c.open(TOPICS.events, r2?.value))).toBe(`${SECRET} (r2)`);
    }
  });

  it('a forgotten subject (its KEK generation destroyed) reads as ERASED_CONTENT; another generation or subject does not', async () => {
    const { codec, keyring: ring } = await openCodec();
    const [r1, r2, bob] = await Promise.all(
      [written('r1'), written('r2', { version: 4 }), written('b1', { subjectId: 'bob' })].map((m) => codec.seal(m)),
    );
    // Destroying generation 2, which never protected these records, erases nothing.
    await ring.forgetSubject(TENANT, SUBJECT, 2);
    expect(writtenContent(await codec.open(TOPICS.events, r1?.value))).toBe(`${SECRET} (r1)`);
    await ring.forgetSubject(TENANT, SUBJECT, 1);
    expect(writtenContent(await codec.open(TOPICS.events, r1?.value))).toBe(ERASED_CONTENT);
    expect(writtenContent(await codec.open(TOPICS.events, r2?.value))).toBe(ERASED_CONTENT);
    expect(writtenContent(await codec.open(TOPICS.events, bob?.value))).toBe(`${SECRET} (b1)`);
  });

  it('keyGeneration 2 seals under a different KEK: forgetting generation 1 leaves the generation-2 record readable', async () => {
    const { codec, keyring: ring, store } = await openCodec();
    const gen1 = await codec.seal(written('r1'));
    const gen2 = await codec.seal(written('r2', { keyGeneration: 2 }));
    const wrappedBy = async (kid: string) => {
      const found = await store.get(kid);
      return found.status === 'present' ? found.wrapped.wrappedBy : found.status;
    };
    expect(await wrappedBy('dk:t1/r1/1')).toBe(ring.subjectKekId(TENANT, SUBJECT, 1));
    expect(await wrappedBy('dk:t1/r2/1')).toBe(ring.subjectKekId(TENANT, SUBJECT, 2));
    await ring.forgetSubject(TENANT, SUBJECT, 1);
    expect(writtenContent(await codec.open(TOPICS.events, gen1.value))).toBe(ERASED_CONTENT);
    expect(await codec.open(TOPICS.events, gen2.value)).toEqual(written('r2', { keyGeneration: 2 }).value);
  });

  it('a service without a keyring cannot write event content (no plaintext reaches the log)', async () => {
    const codec = new ContentCodec({ mode: 'open' });
    await expect(codec.seal(written('r1'))).rejects.toEqual(code('MEM_INTERNAL'));
  });
});

describe('ContentCodec: redact mode', () => {
  it('reads SEALED_CONTENT for commands and events, holding no keys', async () => {
    const { codec } = await openCodec();
    const sealed = await Promise.all([writeCommand('r1'), written('r1'), promoted('r1', 2)].map((m) => codec.seal(m)));
    const redact = new ContentCodec({ mode: 'redact' });
    const [command, event, promotion] = await Promise.all(sealed.map((s) => redact.open(s.topic, deepFreeze(s.value))));
    expect(commandContent(command)).toBe(SEALED_CONTENT);
    expect(writtenContent(event)).toBe(SEALED_CONTENT);
    expect(promotedContent(promotion)).toBe(SEALED_CONTENT);
    // Everything but the content and what hashes it is still there for a metadata-only service.
    expect(event).toEqual(onTheLog(written('r1').value, 'written', SEALED_CONTENT));
    expect(MemoryEvent.safeParse(event).success).toBe(true);
  });

  it('cannot seal content: a redact service sending content fails instead of writing it in the clear', async () => {
    const redact = new ContentCodec({ mode: 'redact' });
    await expect(redact.seal(writeCommand('r1'))).rejects.toEqual(code('MEM_INTERNAL'));
    await expect(redact.seal(written('r1'))).rejects.toEqual(code('MEM_INTERNAL'));
  });
});

describe('ContentCodec: messages it leaves alone', () => {
  const untouched: Array<[string, string, unknown]> = [
    ['another topic', TOPICS.replies, { type: 'WriteMemory', data: { id: 'r1', content: SECRET }, metadata: metadata() }],
    ['another command type', TOPICS.commands, { type: 'PromoteMemory', data: { id: 'r1', expectedVersion: 1 }, metadata: metadata() }],
    ['another event type', TOPICS.events, { type: 'MemoryExpired', data: { id: 'r1', version: 2 }, metadata: { ...metadata(), eventId: 'e' } }],
  ];
  /** Shapes sealing cannot place: refused on the way in (fail closed), passed as they are on the way out. */
  const unsealable: Array<[string, string, unknown]> = [
    ['a WriteMemory on memory.events', TOPICS.events, writeCommand('r1').value],
    ['a MemoryWritten on memory.commands', TOPICS.commands, written('r1').value],
    ['null', TOPICS.commands, null],
    ['a string', TOPICS.events, SECRET],
    ['an array', TOPICS.commands, [writeCommand('r1').value]],
    ['no metadata', TOPICS.commands, { type: 'WriteMemory', data: { id: 'r1', content: SECRET } }],
    ['no tenant', TOPICS.commands, { type: 'WriteMemory', data: { id: 'r1', content: SECRET }, metadata: { subjectId: SUBJECT } }],
    ['a command without an id', TOPICS.commands, { type: 'WriteMemory', data: { content: SECRET }, metadata: metadata() }],
    ['a MemoryWritten without a record version', TOPICS.events, { type: 'MemoryWritten', data: { record: { id: 'r1', content: SECRET } }, metadata: metadata() }],
    ['a content-free type carrying content', TOPICS.events, { type: 'MemoryExpired', data: { id: 'r1', version: 2, content: SECRET }, metadata: { ...metadata(), eventId: 'e' } }],
    ['a new event type the codec was never told of', `${TOPICS.events}.dlq`, { type: 'MemoryAnnotated', data: { id: 'r1', version: 2, note: SECRET }, metadata: { ...metadata(), eventId: 'e' } }],
    ['a new command type', TOPICS.commands, { type: 'AnnotateMemory', data: { id: 'r1', note: SECRET }, metadata: metadata() }],
    ['content that is a number', TOPICS.commands, { ...(writeCommand('r1').value as object), data: { ...(writeCommand('r1').value as { data: object }).data, content: 42 } }],
  ];

  it('seals what is forwarded to a dead-letter topic like its topic, and opens it again', async () => {
    const { codec } = await openCodec();
    const dlq = { ...writeCommand('r1'), topic: `${TOPICS.commands}.dlq` };
    const sealed = await codec.seal(dlq);
    expect(JSON.stringify(sealed.value)).not.toContain(SECRET);
    expect(await codec.open(dlq.topic, sealed.value)).toEqual(dlq.value);
  });

  it.each(untouched)('%s passes seal and open unchanged', async (_name, topic, raw) => {
    const { codec } = await openCodec();
    const value = deepFreeze(structuredClone(raw));
    const message = deepFreeze({ topic, key: 'k', value });
    expect(await codec.seal(message)).toBe(message);
    expect(await codec.open(topic, value)).toBe(value);
    expect(await new ContentCodec({ mode: 'redact' }).open(topic, value)).toBe(value);
    expect(value).toEqual(raw);
  });

  it.each(unsealable)('refuses to seal %s (MEM_INTERNAL, naming no content), and opens it unchanged', async (_name, topic, raw) => {
    const { codec } = await openCodec();
    const value = deepFreeze(structuredClone(raw));
    const refusal = codec.seal({ topic, key: 'k', value });
    await expect(refusal).rejects.toEqual(code('MEM_INTERNAL'));
    await expect(refusal).rejects.not.toThrow(SECRET);
    expect(await codec.open(topic, value)).toBe(value);
  });

  it('classifies every command and event type of the contracts, content or none, and nothing else', () => {
    const typesOf = (union: { options: ReadonlyArray<{ shape: { type: { value: string } } }> }) => union.options.map((o) => o.shape.type.value).sort();
    const classified = (topic: keyof typeof SEALED_TOPIC_TYPES) => [...SEALED_TOPIC_TYPES[topic].content, ...SEALED_TOPIC_TYPES[topic].none].sort();
    expect(classified(TOPICS.commands)).toEqual(typesOf(MemoryCommand));
    expect(classified(TOPICS.events)).toEqual(typesOf(MemoryEvent));
  });

  it('plaintext content (a log written before content encryption) opens as it is', async () => {
    const { codec } = await openCodec();
    for (const message of [writeCommand('r1'), written('r1'), promoted('r1', 2)]) {
      const value = deepFreeze(structuredClone(message.value));
      expect(await codec.open(message.topic, value)).toBe(value);
    }
  });

  it('content that is neither text nor an envelope fails MEM_VALIDATION, in either mode', async () => {
    const { codec } = await openCodec();
    const valid = Envelope.parse(commandContent((await codec.seal(writeCommand('r1'))).value));
    const garbage = [{ ...valid, v: 3 }, { ...valid, iv: 'short' }, { ...valid, extra: 1 }, { kid: 'tk:A' }, {}];
    for (const content of garbage) {
      for (const [topic, value] of [
        [TOPICS.commands, withContent(writeCommand('r1').value, 'command', content)],
        [TOPICS.events, withContent(written('r1').value, 'written', content)],
        [TOPICS.events, withContent(promoted('r1', 2).value, 'promoted', content)],
      ] as const) {
        await expect(codec.open(topic, value)).rejects.toEqual(code('MEM_VALIDATION'));
        await expect(new ContentCodec({ mode: 'redact' }).open(topic, value)).rejects.toEqual(code('MEM_VALIDATION'));
      }
    }
  });
});

const withoutContent = (value: unknown): unknown => {
  const { content: _dropped, ...data } = (value as EventOf<'MemoryPromoted'>).data;
  return { ...(value as EventOf<'MemoryPromoted'>), data };
};
/** A promotion of a record already out of quarantine: record state, no content. */
const promotedWithoutContent = (id: string, version: number): OutgoingMessage => ({ ...promoted(id, version), value: withoutContent(promoted(id, version).value) });

describe('ContentCodec: the hashes that would confirm a guess are sealed with the content', () => {
  const transit = (ring: Keyring) => new ContentCodec({ mode: 'open', keyring: ring, instanceId: 'api-1', clock: () => Date.parse(T0) });
  const messages = (): Array<[Slot, OutgoingMessage]> => [
    ['command', writeCommand('r1')], ['written', written('r1')], ['promoted', promoted('r1', 2)],
  ];

  it('leaves no content hash and no request fingerprint in clear; the placeholder still passes the contract’s schema; open gives both back', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    for (const [slot, message] of [...messages(), ['promoted', promotedWithoutContent('r1', 2)] as [Slot, OutgoingMessage]]) {
      const sealed = await codec.seal(deepFreeze(message));
      const bytes = JSON.stringify(sealed.value);
      for (const secret of [HASH, FINGERPRINT, 'passport']) expect(bytes, slot).not.toContain(secret);
      expect(hashOf(sealed.value, slot)).toBe(ERASED_CONTENT_HASH);
      expect(Sha256Hex.safeParse(hashOf(sealed.value, slot)).success).toBe(true);
      expect((sealed.value as Loose).metadata).not.toHaveProperty('requestHash');
      expect(await codec.open(message.topic, sealed.value)).toEqual(message.value);
    }
  });

  it('seals a write\'s own embedding with its content, on the command and the event: no number of it in clear; open gives it back, redact and a destroyed key do not', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    // Digits no other field holds, so their absence from the bytes says the vector is not there.
    const embedding = { model: 'all-minilm-l6-v2-q@1.19.0-beta29', vector: [0.123456789, -0.987654321, 0.555555551] };
    const withEmbedding = (message: OutgoingMessage): OutgoingMessage => {
      const value = message.value as Loose;
      return { ...message, value: { ...value, data: { ...value.data, embedding } } };
    };
    for (const [slot, message] of [['command', withEmbedding(writeCommand('r1'))], ['written', withEmbedding(written('r1'))]] as Array<[Slot, OutgoingMessage]>) {
      const sealed = await codec.seal(deepFreeze(message));
      const bytes = JSON.stringify(sealed.value);
      for (const secret of ['123456789', '987654321', '555555551']) expect(bytes, slot).not.toContain(secret);
      expect((sealed.value as Loose).data, slot).not.toHaveProperty('embedding');
      expect(await codec.open(message.topic, sealed.value), slot).toEqual(message.value);
      const redacted = (await new ContentCodec({ mode: 'redact' }).open(message.topic, sealed.value)) as Loose;
      expect(redacted.data, slot).not.toHaveProperty('embedding');
    }
    const sealedEvent = await codec.seal(withEmbedding(written('r1')));
    await ring.destroyDataKey(TENANT, 'r1');
    expect(((await codec.open(TOPICS.events, sealedEvent.value)) as Loose).data).not.toHaveProperty('embedding');
  });

  it('refuses to send an embedding where no content is sealed, or one that is not a model and its vector', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    for (const promotion of [promoted('r1', 2), promotedWithoutContent('r1', 2)]) {
      const value = promotion.value as Loose;
      await expect(codec.seal({ ...promotion, value: { ...value, data: { ...value.data, embedding: { model: 'm', vector: [1] } } } }))
        .rejects.toMatchObject({ code: 'MEM_INTERNAL', message: expect.stringContaining('carries an embedding') });
    }
    const command = writeCommand('r1');
    const bad = { ...command, value: { ...(command.value as Loose), data: { ...(command.value as Loose).data, embedding: [0.5, 0.5] } } };
    await expect(codec.seal(bad)).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
  });

  it('seals a promotion without content as an envelope of its hashes alone, under the record’s data key; readers never see that field', async () => {
    const { codec, keyring: ring } = await openCodec();
    const message = promotedWithoutContent('r1', 2);
    const sealed = await codec.seal(message);
    const envelope = Envelope.parse((sealed.value as Loose).data[SEALED_HASHES_FIELD]);
    expect(envelope).toMatchObject({ v: 2, kid: 'dk:t1/r1/1' });
    expect(promotedContent(sealed.value)).toBeUndefined();
    expect(await codec.open(TOPICS.events, sealed.value)).toEqual(message.value);
    const redacted = await new ContentCodec({ mode: 'redact' }).open(TOPICS.events, sealed.value);
    expect(redacted).toEqual(onTheLog(message.value, 'promoted', undefined));
    expect(MemoryEvent.parse(redacted)).toBeDefined();
    await ring.destroyDataKey(TENANT, 'r1');
    const erased = await codec.open(TOPICS.events, sealed.value);
    expect(erased).toEqual(onTheLog(message.value, 'promoted', undefined));
    // Sealing it again (a dead letter forwarded as it came) changes nothing.
    expect(await codec.seal(sealed)).toBe(sealed);
  });

  it('a destroyed key leaves the placeholder and no fingerprint, as redact does: no reader holds a hash of erased content', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    const sealed = await Promise.all(messages().map(async ([slot, m]) => [slot, m, await codec.seal(m)] as const));
    await ring.destroyDataKey(TENANT, 'r1');
    await ring.destroyKey(transitKeyId('api-1', Date.parse(T0)));
    const redact = new ContentCodec({ mode: 'redact' });
    for (const [slot, original, s] of sealed) {
      const erased = await codec.open(s.topic, s.value);
      expect(erased, slot).toEqual(onTheLog(original.value, slot, ERASED_CONTENT));
      expect(await redact.open(s.topic, s.value), slot).toEqual(onTheLog(original.value, slot, SEALED_CONTENT));
      const schema = slot === 'command' ? MemoryCommand : MemoryEvent;
      expect(schema.safeParse(erased).success, slot).toBe(true);
    }
  });

  it('opens v1 envelopes (bare content, hashes in clear) as before; a destroyed key or redact hides their clear hashes too', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    const aad = (version: number) => ({ tenantId: TENANT, subjectId: SUBJECT, recordId: 'r1', version });
    const command = writeCommand('r1');
    const oldCommand = withContent(command.value, 'command', encryptContent(SECRET, await ring.transitKey(transitKeyId('api-1', Date.parse(T0)), true), aad(0)));
    const event = written('r1');
    const oldEvent = withContent(event.value, 'written', await ring.encrypt(writtenContent(event.value) as string, aad(1)));
    const promotion = promoted('r1', 2);
    const oldPromotion = withContent(promotion.value, 'promoted', await ring.encrypt(promotedContent(promotion.value) as string, aad(2)));
    const old: Array<[Slot, OutgoingMessage, unknown]> = [['command', command, oldCommand], ['written', event, oldEvent], ['promoted', promotion, oldPromotion]];
    for (const [slot, original, value] of old) {
      expect(Envelope.parse(slot === 'written' ? writtenContent(value) : slot === 'command' ? commandContent(value) : promotedContent(value)).v).toBe(1);
      expect(await codec.open(original.topic, deepFreeze(value)), slot).toEqual(original.value);
      expect(await new ContentCodec({ mode: 'redact' }).open(original.topic, value), slot).toEqual(onTheLog(original.value, slot, SEALED_CONTENT));
    }
    // A v1 promotion without content had nothing sealed: it opens as it is.
    const bare = deepFreeze(withoutContent(promotion.value));
    expect(await codec.open(TOPICS.events, bare)).toBe(bare);
    await ring.destroyDataKey(TENANT, 'r1');
    for (const [slot, original, value] of old.slice(1)) {
      expect(await codec.open(original.topic, value), slot).toEqual(onTheLog(original.value, slot, ERASED_CONTENT));
    }
  });

  it('an envelope of hashes alone cannot stand in for content, nor the reverse (MEM_VALIDATION)', async () => {
    const { codec } = await openCodec();
    const hashesOnly = (await codec.seal(promotedWithoutContent('r1', 2))).value as Loose;
    const withContentSealed = (await codec.seal(promoted('r1', 2))).value as Loose;
    const contentFromHashes = withContent(withContentSealed, 'promoted', hashesOnly.data[SEALED_HASHES_FIELD]);
    await expect(codec.open(TOPICS.events, contentFromHashes)).rejects.toEqual(code('MEM_VALIDATION'));
    const hashesFromContent = structuredClone(hashesOnly);
    hashesFromContent.data[SEALED_HASHES_FIELD] = withContentSealed.data.content;
    await expect(codec.open(TOPICS.events, hashesFromContent)).rejects.toEqual(code('MEM_VALIDATION'));
  });
});

describe('ContentCodec: provenance is sealed with the content (it is about the subject too)', () => {
  const transit = (ring: Keyring) => new ContentCodec({ mode: 'open', keyring: ring, instanceId: 'api-1', clock: () => Date.parse(T0) });
  const SOURCE = 'crm://patients/alice-7731/oncology';
  const PROVENANCE = [{ source: 'tool' as const, uri: SOURCE, eventId: 'crm-evt-alice-1', observedAt: T0 }, { source: 'user' as const, observedAt: T0 }];
  const KEPT = [{ source: 'tool', observedAt: T0 }, { source: 'user', observedAt: T0 }];
  /** The provenance a message carries, wherever its type keeps it. */
  const provenanceOf = (value: unknown, slot: Slot): unknown => {
    const data = (value as { data: { provenance?: unknown; record?: { provenance?: unknown } } }).data;
    return slot === 'command' ? data.provenance : data.record?.provenance;
  };
  const withProvenance = (message: OutgoingMessage, slot: Slot): OutgoingMessage => {
    const value = structuredClone(message.value) as { data: { provenance?: unknown; record: { provenance?: unknown } } };
    if (slot === 'command') value.data.provenance = PROVENANCE;
    else value.data.record.provenance = PROVENANCE;
    return { ...message, value: (slot === 'command' ? MemoryCommand : MemoryEvent).parse(value) };
  };
  const messages = (): Array<[Slot, OutgoingMessage]> => ([
    ['command', writeCommand('r1')], ['written', written('r1')], ['promoted', promoted('r1', 2)], ['promoted', promotedWithoutContent('r1', 2)],
  ] as Array<[Slot, OutgoingMessage]>).map(([slot, m]) => [slot, withProvenance(m, slot)]);

  it('keeps only the kinds and times of the sources in clear; open gives the provenance back; redact and a destroyed key do not', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    const sealed = await Promise.all(messages().map(async ([slot, m]) => [slot, m, await codec.seal(deepFreeze(m))] as const));
    for (const [slot, original, s] of sealed) {
      const bytes = JSON.stringify(s.value);
      for (const secret of [SOURCE, 'crm-evt-alice-1', 'alice-7731']) expect(bytes, slot).not.toContain(secret);
      expect(provenanceOf(s.value, slot), slot).toEqual(KEPT);
      expect(await codec.open(original.topic, s.value), slot).toEqual(original.value);
      const redacted = await new ContentCodec({ mode: 'redact' }).open(original.topic, s.value);
      expect(provenanceOf(redacted, slot), slot).toEqual(KEPT);
      expect((slot === 'command' ? MemoryCommand : MemoryEvent).safeParse(redacted).success, slot).toBe(true);
    }
    await ring.destroyDataKey(TENANT, 'r1');
    await ring.destroyKey(transitKeyId('api-1', Date.parse(T0)));
    for (const [slot, original, s] of sealed) expect(provenanceOf(await codec.open(original.topic, s.value), slot), slot).toEqual(KEPT);
  });

  it('an envelope sealed before provenance was (a v2 payload without it) opens with the provenance its message kept in clear', async () => {
    const { keyring: ring } = await keyring();
    const codec = transit(ring);
    const event = withProvenance(written('r1'), 'written');
    const payload = JSON.stringify({ content: writtenContent(event.value), contentHash: HASH });
    const old = withContent(event.value, 'written', await ring.encrypt(payload, { tenantId: TENANT, subjectId: SUBJECT, recordId: 'r1', version: 1 }, 2)) as Loose;
    old.data.record.contentHash = ERASED_CONTENT_HASH;
    const opened = await codec.open(TOPICS.events, deepFreeze(old));
    expect(provenanceOf(opened, 'written')).toEqual(PROVENANCE);
    expect(writtenContent(opened)).toBe(writtenContent(event.value));
  });
});
