import type { OutgoingMessage } from '@gm/bus';
import { z } from 'zod';
import { CallerEmbedding, ERASED_CONTENT, ERASED_CONTENT_HASH, GovernedMemoryError, Provenance, SEALED_CONTENT, Sha256Hex, TOPICS, erasedProvenance } from '@gm/contracts';
import { Envelope, decryptContent, encryptContent, type ContentAad } from '../envelope.ts';
import { isCryptoError } from '../errors.ts';
import type { Keyring } from '../keyring.ts';
import { TransitKeys } from './transit.ts';

/**
 * What a service may do with content on memory.commands and memory.events:
 * - `open`: decrypt (projector, index-builder, write-admission, verifier);
 * - `redact`: see SEALED_CONTENT instead, holding no content keys (orchestrator, expiry).
 * Sealing is decided by what a service sends: commands need a keyring for the sender's transit
 * key, events a keyring that may create subject keys (write-admission only).
 */
export interface ContentCodecOptions {
  mode: 'open' | 'redact';
  /** Needed to seal or open any content: commands (transit keys) and events (subject keys). */
  keyring?: Keyring;
  /** The sending instance, which names its transit keys (sealing commands). */
  instanceId?: string;
  /** Epoch-ms clock for the transit key's hour (default Date.now). */
  clock?: () => number;
}

/**
 * Sealing fails closed: on memory.commands and memory.events (and their dead letters) only these
 * types are sent. The first carry content in a slot the codec knows; the others carry none. A
 * type in neither list — a new one added to the contracts, a typo, a value that is no message —
 * is refused rather than written as it is, since nothing says where its content would be. A
 * unit spec holds both lists to the contracts' unions, so a new type must be classified here.
 */
export const SEALED_TOPIC_TYPES = {
  [TOPICS.commands]: {
    content: ['WriteMemory'],
    none: ['PromoteMemory', 'RejectQuarantined', 'ExpireMemory', 'RevokeMemory', 'DeleteMemory', 'ForgetSubject', 'TombstoneMemory', 'PurgeMemory'],
  },
  [TOPICS.events]: {
    content: ['MemoryWritten', 'MemoryPromoted'],
    none: ['MemorySuperseded', 'MemoryExpired', 'MemoryRevocationRequested', 'SubjectForgotten', 'MemoryTombstoned', 'MemoryPurged'],
  },
} as const satisfies Record<string, { content: readonly string[]; none: readonly string[] }>;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What a v2 envelope seals: the content, when the message carries one, and the hashes that would
 * confirm a guess of it — the content's sha256 and the request's idempotency fingerprint (which
 * hashes the request body, content included). A plain hash of content is content: sealed with
 * it, a hash is gone when its key is (design §8.5). So is the writer's own embedding of the
 * content (§6.7): a vector is derived from the text, and near neighbours tell what it says. And so
 * is the record's provenance: where a fact came from (`crm://patients/jane-…/oncology`) is about
 * the subject too, so the clear message keeps only its kinds and times (`erasedProvenance`).
 * Envelopes sealed before provenance was hold none: their message keeps it in clear, as written.
 */
const SealedPayload = z
  .object({
    content: z.string().optional(), contentHash: Sha256Hex.optional(), requestHash: Sha256Hex.optional(), embedding: CallerEmbedding.optional(),
    provenance: z.array(Provenance).optional(),
  })
  .strict();
type SealedPayload = z.infer<typeof SealedPayload>;

/**
 * Where a promotion that carries no content keeps its sealed hashes on the log. Only the codec
 * ever sees this field: `open` takes it away, whatever the mode.
 */
export const SEALED_HASHES_FIELD = 'sealedHashes';

/**
 * Where a message keeps what gets sealed: the envelope's holder and field (`content`, or the
 * sealed-hashes field of a promotion without content), the object holding `contentHash` (and
 * `provenance`, beside it in every message that carries content), the metadata holding `requestHash` (all shallow copies along the path), the AAD and KEK generation.
 */
interface ContentSlot {
  holder: Json;
  field: 'content' | typeof SEALED_HASHES_FIELD;
  hashHolder: Json;
  /** The object whose `embedding` (a write's own vector of the content) is sealed with it: the command's or the event's data. */
  embeddingHolder?: Json;
  metadata: Json;
  aad: ContentAad;
  kekGeneration?: number;
}

/** Finds the content slot of a command or event value (after a shallow copy along the path); undefined when none. */
function contentSlot(messageTopic: string, value: unknown): { topic: string; root: Json; slot: ContentSlot } | undefined {
  // A dead letter keeps its topic's content rules: whatever a handler forwards there is sealed too.
  const topic = messageTopic.endsWith('.dlq') ? messageTopic.slice(0, -'.dlq'.length) : messageTopic;
  if (!isObject(value) || !isObject(value.data) || !isObject(value.metadata)) return undefined;
  const metadata = { ...value.metadata };
  const { tenantId, subjectId } = metadata;
  if (typeof tenantId !== 'string' || typeof subjectId !== 'string') return undefined;
  const data = { ...value.data };
  const root: Json = { ...value, data, metadata };
  if (topic === TOPICS.commands && value.type === 'WriteMemory' && typeof data.id === 'string' && data.content !== undefined) {
    // A command has no record version yet: 0 binds the envelope to "the command for this id".
    return { topic, root, slot: { holder: data, field: 'content', hashHolder: data, embeddingHolder: data, metadata, aad: { tenantId, subjectId, recordId: data.id, version: 0 } } };
  }
  if (topic !== TOPICS.events) return undefined;
  if (value.type === 'MemoryWritten' && isObject(data.record) && data.record.content !== undefined) {
    const record = { ...data.record };
    data.record = record;
    if (typeof record.id !== 'string' || typeof record.version !== 'number') return undefined;
    const generation = typeof data.keyGeneration === 'number' ? data.keyGeneration : undefined;
    return {
      topic, root,
      slot: {
        holder: record, field: 'content', hashHolder: record, embeddingHolder: data, metadata,
        aad: { tenantId, subjectId, recordId: record.id, version: record.version }, ...(generation ? { kekGeneration: generation } : {}),
      },
    };
  }
  // The hash of a promotion sits in its record, beside the content or without any (a record
  // already out of quarantine): sealed either way, in the content's envelope or a field of its own.
  if (value.type === 'MemoryPromoted' && isObject(data.record) && typeof data.id === 'string' && typeof data.version === 'number') {
    const record = { ...data.record };
    data.record = record;
    const field = data.content === undefined ? SEALED_HASHES_FIELD : 'content';
    return { topic, root, slot: { holder: data, field, hashHolder: record, metadata, aad: { tenantId, subjectId, recordId: data.id, version: data.version } } };
  }
  return undefined;
}
/** Throws unless the value, which has no content slot, may be sent as it is. */
function refuseUnsealable(messageTopic: string, value: unknown): void {
  const topic = messageTopic.endsWith('.dlq') ? messageTopic.slice(0, -'.dlq'.length) : messageTopic;
  const types = topic === TOPICS.commands || topic === TOPICS.events ? SEALED_TOPIC_TYPES[topic] : undefined;
  if (types === undefined) return;
  const type = isObject(value) && typeof value.type === 'string' ? value.type : undefined;
  // Only the type is named: never a value, which may be the very content this guards.
  const carrier = type !== undefined && (types.content as readonly string[]).includes(type);
  // A content type sent without content (a promotion of a record already out of quarantine).
  if (carrier && !hasContentField(value)) return;
  if (type === undefined || !(types.none as readonly string[]).includes(type)) {
    const what = type === undefined ? 'a value that is no typed message' : carrier ? `a ${type} whose content slot is malformed` : `an unknown message type "${type}"`;
    throw new GovernedMemoryError('MEM_INTERNAL', `${messageTopic}: refusing to send ${what}: its content could reach the log unsealed`);
  }
  if (hasContentField(value)) {
    throw new GovernedMemoryError('MEM_INTERNAL', `${messageTopic}: refusing to send a ${type} that carries a content field it should not have`);
  }
}

/** Whether a value holds a field of one of these names anywhere. */
const hasField = (value: unknown, names: readonly string[]): boolean => {
  if (Array.isArray(value)) return value.some((v) => hasField(v, names));
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, child]) => names.includes(key) || hasField(child, names));
};
/** Whether a value holds content, or an embedding of it, anywhere. */
const hasContentField = (value: unknown): boolean => hasField(value, ['content', 'embedding']);

export class ContentCodec {
  private readonly transit: TransitKeys | undefined;

  constructor(private readonly options: ContentCodecOptions) {
    this.transit = options.keyring ? new TransitKeys(options.keyring, options.instanceId ?? 'local', options.clock ?? Date.now) : undefined;
  }

  /**
   * Replaces plaintext content with a v2 envelope that also holds the message's `contentHash`,
   * `requestHash` and `provenance`: the clear message keeps ERASED_CONTENT_HASH in place of the
   * first, nothing of the second, and of the provenance only its kinds and times. A promotion without content gets an envelope of its hashes alone.
   * Messages of other topics, content-free types and messages already sealed pass unchanged.
   * Anything else on a sealed topic throws MEM_INTERNAL (see SEALED_TOPIC_TYPES): no shape the
   * codec does not know reaches the log.
   */
  async seal(message: OutgoingMessage): Promise<OutgoingMessage> {
    const found = contentSlot(message.topic, message.value);
    if (found === undefined) {
      refuseUnsealable(message.topic, message.value);
      return message;
    }
    const { holder, field, hashHolder, embeddingHolder, metadata, aad, kekGeneration } = found.slot;
    // Only a write carries its own embedding, in the slot sealed with its content; anywhere else it would go out in clear.
    if (embeddingHolder === undefined && hasField(found.root, ['embedding'])) {
      throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send a ${String(found.root.type)} that carries an embedding it should not have`);
    }
    const current = holder[field];
    if (current !== undefined && typeof current !== 'string') {
      // Already sealed: a dead letter forwarded as it came, whose embedding went into the envelope too.
      if (Envelope.safeParse(current).success) {
        if (embeddingHolder?.embedding !== undefined) {
          throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send an embedding in clear beside sealed content`);
        }
        return message;
      }
      throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send content that is neither text nor a sealed envelope`);
    }
    const { contentHash } = hashHolder;
    if (typeof contentHash !== 'string') throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send a content-carrying message without its content hash`);
    const { requestHash } = metadata;
    const provenance = hashHolder.provenance === undefined ? undefined : Provenance.array().safeParse(hashHolder.provenance);
    if (provenance !== undefined && !provenance.success) throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send provenance that is malformed`);
    const embedding = embeddingHolder?.embedding;
    if (embedding !== undefined && !CallerEmbedding.safeParse(embedding).success) {
      throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send an embedding that is not a model id and its vector`);
    }
    const payload: SealedPayload = {
      ...(typeof current === 'string' ? { content: current } : {}),
      contentHash,
      ...(typeof requestHash === 'string' ? { requestHash } : {}),
      ...(embedding === undefined ? {} : { embedding: embedding as CallerEmbedding }),
      ...(provenance === undefined ? {} : { provenance: provenance.data }),
    };
    const plaintext = JSON.stringify(payload);
    if (found.topic === TOPICS.commands) {
      holder[field] = encryptContent(plaintext, await this.transitKeys('seal a command').active(), aad, 2);
    } else {
      const keyring = this.options.keyring;
      // Only a service that reads content (write-admission) writes it: the edge seals commands only.
      if (keyring === undefined || this.options.mode === 'redact') {
        throw new GovernedMemoryError('MEM_INTERNAL', 'this service may not write memory.events content');
      }
      holder[field] = await keyring.encrypt(plaintext, { ...aad, ...(kekGeneration ? { kekGeneration } : {}) }, 2);
    }
    hashHolder.contentHash = ERASED_CONTENT_HASH;
    if (provenance !== undefined) hashHolder.provenance = erasedProvenance(provenance.data);
    delete metadata.requestHash;
    if (embeddingHolder !== undefined) delete embeddingHolder.embedding;
    return { ...message, value: found.root };
  }

  /**
   * Gives back what seal took (`open`): the content, its hash, the request fingerprint and the
   * provenance. A destroyed key reads as ERASED_CONTENT with ERASED_CONTENT_HASH, no fingerprint
   * and the provenance the clear message kept (its kinds and times), and so does `redact` with
   * SEALED_CONTENT: neither view holds a hash of the content, whatever the envelope's version. v1 envelopes (bare content, hashes in clear) and plaintext content (a
   * log written before sealing, design §8.5) still open. A tampered envelope or a missing key throws: the
   * bus retries, then dead-letters it.
   */
  async open(topic: string, value: unknown): Promise<unknown> {
    const found = contentSlot(topic, value);
    if (found === undefined) return value;
    const { holder, field, hashHolder, embeddingHolder, metadata, aad } = found.slot;
    const sealed = holder[field];
    if (!isObject(sealed)) return value;
    const envelope = Envelope.safeParse(sealed);
    if (!envelope.success) throw new GovernedMemoryError('MEM_VALIDATION', `${topic}: content is neither text nor a sealed envelope`);
    if (field === SEALED_HASHES_FIELD) delete holder[field];
    const unreadable = (marker: string) => {
      if (field === 'content') holder.content = marker;
      hashHolder.contentHash = ERASED_CONTENT_HASH;
      delete metadata.requestHash;
      return found.root;
    };
    if (this.options.mode === 'redact') return unreadable(SEALED_CONTENT);
    const keyring = this.options.keyring;
    if (keyring === undefined) throw new GovernedMemoryError('MEM_INTERNAL', `this service holds no keyring and cannot open ${topic} content`);
    let plaintext: string;
    try {
      plaintext = found.topic === TOPICS.commands
        ? decryptContent(envelope.data, await this.transitKeys('open a command').byId(envelope.data.kid), aad)
        : await keyring.decrypt(envelope.data, aad);
    } catch (err) {
      // A command whose transit key is gone reads as erased too: write-admission then rejects it
      // (its content no longer matches its hash) with a reply, instead of dead-lettering it.
      if (!isCryptoError(err, 'KEY_DESTROYED')) throw err;
      return unreadable(ERASED_CONTENT);
    }
    const payload = envelope.data.v === 1 ? { content: plaintext } : parsePayload(topic, plaintext);
    // An envelope sealed for content holds content; one sealed for hashes alone holds none.
    if ((field === 'content') !== (payload.content !== undefined)) {
      throw new GovernedMemoryError('MEM_VALIDATION', `${topic}: a sealed ${field === 'content' ? 'content' : 'hash'} envelope holds the wrong payload`);
    }
    if (payload.content !== undefined) holder.content = payload.content;
    if (payload.contentHash !== undefined) hashHolder.contentHash = payload.contentHash;
    if (payload.requestHash !== undefined) metadata.requestHash = payload.requestHash;
    if (payload.provenance !== undefined) hashHolder.provenance = payload.provenance;
    if (payload.embedding !== undefined && embeddingHolder !== undefined) embeddingHolder.embedding = payload.embedding;
    return found.root;
  }

  private transitKeys(what: string): TransitKeys {
    if (this.transit === undefined) throw new GovernedMemoryError('MEM_INTERNAL', `this service holds no keys and cannot ${what}`);
    return this.transit;
  }
}

/** A v2 envelope's plaintext; authenticated already, so a bad one is a writer's bug, never a guess. */
function parsePayload(topic: string, plaintext: string): SealedPayload {
  let json: unknown;
  try {
    json = JSON.parse(plaintext);
  } catch {
    json = undefined;
  }
  const parsed = SealedPayload.safeParse(json);
  if (!parsed.success) throw new GovernedMemoryError('MEM_VALIDATION', `${topic}: a sealed envelope holds no payload this version reads`);
  return parsed.data;
}
