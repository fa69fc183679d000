import type { OutgoingMessage } from '@gm/bus';
import { ERASED_CONTENT, GovernedMemoryError, SEALED_CONTENT, TOPICS } from '@gm/contracts';
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

/** Where a message keeps its content, if it has any: [holder object, field name, AAD, KEK generation]. */
interface ContentSlot {
  holder: Json;
  aad: ContentAad;
  kekGeneration?: number;
}

/** Finds the content slot of a command or event value (after a shallow copy along the path); undefined when none. */
function contentSlot(messageTopic: string, value: unknown): { topic: string; root: Json; slot: ContentSlot } | undefined {
  // A dead letter keeps its topic's content rules: whatever a handler forwards there is sealed too.
  const topic = messageTopic.endsWith('.dlq') ? messageTopic.slice(0, -'.dlq'.length) : messageTopic;
  if (!isObject(value) || !isObject(value.data) || !isObject(value.metadata)) return undefined;
  const meta = value.metadata;
  const tenantId = meta.tenantId;
  const subjectId = meta.subjectId;
  if (typeof tenantId !== 'string' || typeof subjectId !== 'string') return undefined;
  const data = { ...value.data };
  const root: Json = { ...value, data };
  if (topic === TOPICS.commands && value.type === 'WriteMemory' && typeof data.id === 'string' && data.content !== undefined) {
    // A command has no record version yet: 0 binds the envelope to "the command for this id".
    return { topic, root, slot: { holder: data, aad: { tenantId, subjectId, recordId: data.id, version: 0 } } };
  }
  if (topic !== TOPICS.events) return undefined;
  if (value.type === 'MemoryWritten' && isObject(data.record) && data.record.content !== undefined) {
    const record = { ...data.record };
    data.record = record;
    if (typeof record.id !== 'string' || typeof record.version !== 'number') return undefined;
    const generation = typeof data.keyGeneration === 'number' ? data.keyGeneration : undefined;
    return {
      topic, root,
      slot: { holder: record, aad: { tenantId, subjectId, recordId: record.id, version: record.version }, ...(generation ? { kekGeneration: generation } : {}) },
    };
  }
  if (value.type === 'MemoryPromoted' && data.content !== undefined && typeof data.id === 'string' && typeof data.version === 'number') {
    return { topic, root, slot: { holder: data, aad: { tenantId, subjectId, recordId: data.id, version: data.version } } };
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

const hasContentField = (value: unknown): boolean => {
  if (Array.isArray(value)) return value.some(hasContentField);
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, child]) => key === 'content' || hasContentField(child));
};

export class ContentCodec {
  private readonly transit: TransitKeys | undefined;

  constructor(private readonly options: ContentCodecOptions) {
    this.transit = options.keyring ? new TransitKeys(options.keyring, options.instanceId ?? 'local', options.clock ?? Date.now) : undefined;
  }

  /**
   * Replaces plaintext content with its envelope; messages of other topics, content-free types
   * and content already sealed pass unchanged. Anything else on a sealed topic throws
   * MEM_INTERNAL (see SEALED_TOPIC_TYPES): no shape the codec does not know reaches the log.
   */
  async seal(message: OutgoingMessage): Promise<OutgoingMessage> {
    const found = contentSlot(message.topic, message.value);
    if (found === undefined) {
      refuseUnsealable(message.topic, message.value);
      return message;
    }
    const { content } = found.slot.holder;
    if (typeof content !== 'string') {
      if (Envelope.safeParse(content).success) return message;
      throw new GovernedMemoryError('MEM_INTERNAL', `${message.topic}: refusing to send content that is neither text nor a sealed envelope`);
    }
    const { holder, aad, kekGeneration } = found.slot;
    const plaintext = holder.content as string;
    if (found.topic === TOPICS.commands) {
      holder.content = encryptContent(plaintext, await this.transitKeys('seal a command').active(), aad);
    } else {
      const keyring = this.options.keyring;
      // Only a service that reads content (write-admission) writes it: the edge seals commands only.
      if (keyring === undefined || this.options.mode === 'redact') {
        throw new GovernedMemoryError('MEM_INTERNAL', 'this service may not write memory.events content');
      }
      holder.content = await keyring.encrypt(plaintext, { ...aad, ...(kekGeneration ? { kekGeneration } : {}) });
    }
    return { ...message, value: found.root };
  }

  /**
   * Replaces an envelope with its plaintext (`open`), ERASED_CONTENT when its key was destroyed,
   * or SEALED_CONTENT (`redact`). Plaintext content (a log written before issue 7) passes as is.
   * A tampered envelope or a missing key throws: the bus retries, then dead-letters it.
   */
  async open(topic: string, value: unknown): Promise<unknown> {
    const found = contentSlot(topic, value);
    if (found === undefined || !isObject(found.slot.holder.content)) return value;
    const { holder, aad } = found.slot;
    const envelope = Envelope.safeParse(holder.content);
    if (!envelope.success) throw new GovernedMemoryError('MEM_VALIDATION', `${topic}: content is neither text nor a sealed envelope`);
    if (this.options.mode === 'redact') {
      holder.content = SEALED_CONTENT;
      return found.root;
    }
    const keyring = this.options.keyring;
    if (keyring === undefined) throw new GovernedMemoryError('MEM_INTERNAL', `this service holds no keyring and cannot open ${topic} content`);
    try {
      holder.content = found.topic === TOPICS.commands
        ? decryptContent(envelope.data, await this.transitKeys('open a command').byId(envelope.data.kid), aad)
        : await keyring.decrypt(envelope.data, aad);
    } catch (err) {
      // A command whose transit key is gone reads as erased too: write-admission then rejects it
      // (its content no longer matches its hash) with a reply, instead of dead-lettering it.
      if (!isCryptoError(err, 'KEY_DESTROYED')) throw err;
      holder.content = ERASED_CONTENT;
    }
    return found.root;
  }

  private transitKeys(what: string): TransitKeys {
    if (this.transit === undefined) throw new GovernedMemoryError('MEM_INTERNAL', `this service holds no keys and cannot ${what}`);
    return this.transit;
  }
}
