import { createHash } from 'node:crypto';
import type { KeyValueStore } from './port.ts';
import { AdmissionSnapshots } from './repositories/admission.ts';
import { KeySpace } from './repositories/keys.ts';
import { RecordHistoryStore } from './repositories/history.ts';
import { ContentStore, IdClaims, RecordHash, Tombstones } from './repositories/records.ts';
import { ExpirySchedule } from './repositories/schedule.ts';
import { PacketStore } from './repositories/packets.ts';
import { RetrievalCache } from './repositories/cache.ts';
import { DataGenerations, DeletionJobs, PolicyRevisions, Revocations } from './repositories/jobs.ts';
import { IssuedCapabilities, Policies } from './repositories/policies.ts';
import { PolicyDecisionReads, PolicyProjection } from './repositories/policy-projection.ts';
import { DeletionReceipts } from './repositories/receipts.ts';
import { CommandOutcomes } from './repositories/commands.ts';
import { RateCounters } from './repositories/rate-counters.ts';

/** Every typed view of the state store, sharing one key-value connection and key prefix. */
export class StateStore {
  readonly keys: KeySpace;
  readonly records: RecordHash;
  readonly contents: ContentStore;
  readonly history: RecordHistoryStore;
  readonly tombstones: Tombstones;
  readonly idClaims: IdClaims;
  readonly expiries: ExpirySchedule;
  readonly packets: PacketStore;
  readonly cache: RetrievalCache;
  readonly jobs: DeletionJobs;
  readonly receipts: DeletionReceipts;
  readonly policyRevisions: PolicyRevisions;
  readonly revocations: Revocations;
  /** Whether the policy projection is loaded (policy-projection.ts). */
  readonly policyProjection: PolicyProjection;
  /** What a policy decision reads: closed (MEM_UNAVAILABLE) while the projection is not loaded. */
  readonly policyDecisions: PolicyDecisionReads;
  readonly generations: DataGenerations;
  readonly policies: Policies;
  readonly issuedCapabilities: IssuedCapabilities;
  readonly admission: AdmissionSnapshots;
  readonly commands: CommandOutcomes;
  readonly rateCounters: RateCounters;

  /** `nowMs` must be the clock the key-value store expires keys by. */
  constructor(readonly kv: KeyValueStore, prefix = 'gm:', nowMs: () => number = Date.now) {
    this.keys = new KeySpace(prefix);
    this.records = new RecordHash(kv, this.keys);
    this.contents = new ContentStore(kv, this.keys);
    this.history = new RecordHistoryStore(kv, this.keys);
    this.tombstones = new Tombstones(kv, this.keys);
    this.idClaims = new IdClaims(kv, this.keys);
    this.expiries = new ExpirySchedule(kv, this.keys);
    this.packets = new PacketStore(kv, this.keys, nowMs);
    this.cache = new RetrievalCache(kv, this.keys);
    this.jobs = new DeletionJobs(kv, this.keys);
    this.receipts = new DeletionReceipts(kv, this.keys);
    this.policyRevisions = new PolicyRevisions(kv, this.keys);
    this.revocations = new Revocations(kv, this.keys);
    this.policyProjection = new PolicyProjection(kv, this.keys);
    this.policyDecisions = new PolicyDecisionReads(kv, this.keys, this.revocations);
    this.generations = new DataGenerations(kv, this.keys);
    this.policies = new Policies(kv, this.keys, this.policyRevisions, this.revocations, nowMs);
    this.issuedCapabilities = new IssuedCapabilities(kv, this.keys, nowMs);
    this.admission = new AdmissionSnapshots(kv, this.keys);
    this.commands = new CommandOutcomes(kv, this.keys);
    this.rateCounters = new RateCounters(kv, this.keys);
  }

  /**
   * sha256 over the projected state: every record's metadata, whether its primary content
   * exists, its tombstone and its versions; then the policy data of every tenant (grants, delegations,
   * revocations, legal holds, revision). Two stores that folded the same logs agree on it.
   */
  async projectionDigest(): Promise<string> {
    const hash = createHash('sha256');
    const records = (await this.records.all()).sort((a, b) => `${a.tenantId}/${a.id}`.localeCompare(`${b.tenantId}/${b.id}`));
    for (const r of records) {
      const hasContent = (await this.contents.count(r.tenantId, [r.id])) > 0;
      const tomb = (await this.tombstones.filterTombstoned(r.tenantId, [r.id])).size > 0;
      const versions = await this.history.versions(r.tenantId, r.id, r.version);
      hash.update(`${JSON.stringify(r)}|${hasContent ? 1 : 0}|${tomb ? 1 : 0}|${JSON.stringify(versions)}\n`);
    }
    hash.update(`policy:${await this.policies.digest()}\n`);
    return hash.digest('hex');
  }
}
