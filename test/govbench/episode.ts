import type { DomainVocab, Slot } from './domains/index.ts';
import type {
  Asker, AttackKind, Category, Checkpoint, Domain, Expected, GrantSpec, MemoryWrite, Request, Resource, Step,
} from './model.ts';
import { Rng } from './rng.ts';

const RW = ['search', 'read', 'cite', 'write', 'request_delete'];

/** One record the episode wrote: its id, text and leak marker. */
export interface Written { id: string; slot: Slot; content: string; code: string; subjectId: string }

/**
 * Builds the steps of one episode: the askers, grants, delegations and records of a domain,
 * and checkpoints hidden among them. Everything comes from `rng`, so a seed fixes it all.
 */
export class EpisodeBuilder {
  readonly steps: Step[] = [];
  readonly records = new Map<Slot, Written>();
  private readonly codes = new Map<Slot, string>();
  private count = 0;
  readonly subject: string;
  readonly forgetSubject: string;

  constructor(readonly id: string, readonly v: DomainVocab, readonly rng: Rng) {
    this.subject = rng.pick(v.subjects);
    this.forgetSubject = `${rng.pick(v.subjects.filter((s) => s !== this.subject))}-${rng.int(1000)}`;
  }

  get domain(): Domain {
    return this.v.domain;
  }

  asker(key: string, principal: string, scopes: Resource[], purpose: string, actions: string[] = RW, agentId = principal): Asker {
    return { key, agentId, principal, scopes, purpose, actions };
  }

  grant(key: string, principal: string, resource: Resource, role: GrantSpec['role'], purposes: string[], extra: Partial<GrantSpec> = {}): void {
    this.steps.push({ type: 'grant', grant: { key, principal, kind: extra.kind ?? 'person', resource, role, purposes, ...extra } });
  }

  /** The leak marker of a slot: a made-up word in its text and nowhere else. */
  code(slot: Slot): string {
    let code = this.codes.get(slot);
    if (!code) {
      code = this.rng.code();
      this.codes.set(slot, code);
    }
    return code;
  }

  text(slot: Slot, subjectId = this.subject): string {
    const name = subjectId.replace(/-\d+$/, '').replace(/-/g, ' ');
    return this.v.text[slot].replaceAll('{S}', name).replaceAll('{C}', this.code(slot));
  }

  write(writer: Asker, slot: Slot, memory: Partial<MemoryWrite> = {}): Written {
    const subjectId = memory.subjectId ?? this.subject;
    const record: Written = { id: `${slot.toLowerCase()}-${String(this.rng.int(1e6)).padStart(6, '0')}`, slot, content: this.text(slot, subjectId), code: this.code(slot), subjectId };
    this.records.set(slot, record);
    this.steps.push({
      type: 'write', writer,
      memory: { id: record.id, subjectId, resource: writer.scopes[0] ?? { kind: 'project', id: 'none' }, kind: 'fact', trust: 'trusted', content: record.content, ...memory },
    });
    return record;
  }

  rec(slot: Slot): Written {
    const record = this.records.get(slot);
    if (!record) throw new Error(`episode ${this.id}: no record in slot ${slot}`);
    return record;
  }

  /** Leak targets of records: their ids and their markers. */
  leaks(...slots: Slot[]): string[] {
    return slots.flatMap((slot) => [this.rec(slot).id, this.rec(slot).code]);
  }

  /** A query for a record: its whole text, or its marker with a few of its words (a paraphrase). */
  query(slot: Slot, style: 'exact' | 'paraphrase' | 'random' = 'random'): string {
    const record = this.rec(slot);
    const chosen = style === 'random' ? (this.rng.next() < 0.5 ? 'exact' : 'paraphrase') : style;
    if (chosen === 'exact') return record.content;
    const words = record.content.split(/\W+/).filter((w) => w.length > 3 && w !== record.code);
    const picked = [this.rng.pick(words), this.rng.pick(words)];
    return `${picked.join(' ')} ${record.code}`;
  }

  checkpoint(
    category: Category, kind: AttackKind | 'utility', situation: string, asker: Asker, request: Request, expected: Expected,
    leakTargets: string[] = [], extra: Partial<Checkpoint> = {},
  ): Checkpoint {
    this.count += 1;
    const checkpoint: Checkpoint = {
      id: `${this.id}.${String(this.count).padStart(3, '0')}`, episode: this.id, domain: this.domain,
      category, kind, situation, asker, request, expected, leakTargets, ...extra,
    };
    this.steps.push({ type: 'checkpoint', checkpoint });
    return checkpoint;
  }

  /** A checkpoint that is not a step of its own (the read that measures revocation convergence). */
  detached(category: Category, kind: AttackKind, situation: string, asker: Asker, request: Request, expected: Expected, leakTargets: string[]): Checkpoint {
    const checkpoint = this.checkpoint(category, kind, situation, asker, request, expected, leakTargets);
    this.steps.pop();
    return checkpoint;
  }

  search(query: string, extraBody?: Record<string, unknown>): Request {
    return { op: 'search', query, ...(extraBody ? { extraBody } : {}) };
  }

  /** An authorized search that must return these records (U, OR). */
  expectFound(situation: string, asker: Asker, slot: Slot, style: 'exact' | 'paraphrase' | 'random' = 'random', extra: Partial<Checkpoint> = {}): Checkpoint {
    return this.checkpoint('utility', 'utility', situation, asker, this.search(this.query(slot, style)), { outcome: 'items', recordIds: [this.rec(slot).id] }, [], extra);
  }
}
