/**
 * The vocabulary of govbench (design §12): episodes of multi-principal steps, and hidden
 * checkpoints with an expected outcome and leak targets. Pure data — no IO, no clock.
 */

export const DOMAINS = ['medical', 'office', 'education', 'household'] as const;
export type Domain = (typeof DOMAINS)[number];

/** The attack kinds of design §12, plus `expired_recall` (TTL) and the utility checkpoints. */
export const ATTACK_KINDS = [
  'cross_project', 'contractor_overreach', 'delegate_overreach', 'role_mismatch', 'label_existence_leak',
  'manager_overreach', 'impersonation', 'indirect_inference', 'authority_pressure', 'confirm_yes_no',
  'split_reconstruction', 'update_delete_conflict', 'post_delete_recovery', 'post_delete_direct',
  'purpose_forgery', 'stale_cache', 'read_during_deletion', 'revoked_delegate', 'same_name_projects',
  'expired_recall',
] as const;
export type AttackKind = (typeof ATTACK_KINDS)[number];

/** utility: an authorized request; access: an access-control probe; forgetting: after a delete/forget/update/expiry. */
export type Category = 'utility' | 'access' | 'forgetting';

export interface Resource { kind: 'project' | 'case' | 'workspace'; id: string }

/** Who asks: the capability the runner issues (and reuses for the episode, like an agent's run). */
export interface Asker {
  /** Stable key of this capability within the episode (same key ⇒ same token). */
  key: string;
  agentId: string;
  principal: string;
  scopes: Resource[];
  /** Also scoped to the tenant itself (tenant-wide administration, design §6.2 rule 12). */
  tenantWide?: boolean;
  purpose: string;
  actions: string[];
}

export interface MemoryWrite {
  id: string;
  subjectId: string;
  resource: Resource;
  kind: 'fact' | 'working_note' | 'preference' | 'skill';
  trust: 'trusted' | 'untrusted';
  content: string;
  visibility?: 'private' | 'team' | 'restricted';
  sensitivity?: 'normal' | 'confidential' | 'restricted';
  purposes?: string[];
  supersedesId?: string;
  /** Offset from the episode's start, ms (TTL checkpoints). */
  expiresInMs?: number;
  /** Fields naive clients send and a governed API must refuse (impersonation). */
  owner?: { principalId: string; kind: 'person' | 'agent' };
  agentIdClaim?: string;
  tenantIdClaim?: string;
}

export interface GrantSpec {
  key: string;
  principal: string;
  kind: 'person' | 'agent';
  resource: Resource;
  role: 'member' | 'reviewer' | 'manager' | 'admin';
  purposes: string[];
  restricted?: Array<'normal' | 'confidential' | 'restricted'>;
  /** Offset from the episode's start, ms (contractor deadlines). */
  notAfterInMs?: number;
}

export interface DelegationSpec { key: string; delegator: Asker; agentId: string; resources: Resource[]; purposes: string[]; actions: string[] }

/** What a checkpoint sends. `extraBody` adds fields (authority claims, a purpose in the body). */
export type Request =
  | { op: 'search'; query: string; subjectId?: string; extraBody?: Record<string, unknown> }
  | { op: 'get'; recordId: string }
  | { op: 'write'; memory: MemoryWrite }
  | { op: 'validate'; packetOf: string };

/** What must happen: these items in the packet (utility), or nothing hidden / a denial. */
export type Expected =
  | { outcome: 'items'; recordIds: string[] }
  | { outcome: 'found'; recordId: string }
  | { outcome: 'nothing' }
  | { outcome: 'denied' }
  | { outcome: 'packet_invalid'; recordIds: string[] }
  /**
   * The record, read by id, marked as what a correction replaced (docs/api.md: history stays):
   * `status: superseded` and `supersededById` naming the correction. Served as current, or
   * without its successor, it is a violation.
   */
  | { outcome: 'superseded'; recordId: string; by: string };

export interface Checkpoint {
  id: string;
  episode: string;
  domain: Domain;
  category: Category;
  /** The attack a probe models; utility checkpoints say which situation they exercise instead. */
  kind: AttackKind | 'utility';
  situation: string;
  asker: Asker;
  /** A token edited after signing (purpose forgery): the runner tampers with these claims. */
  tamper?: { purpose?: string; scopes?: Resource[] };
  request: Request;
  expected: Expected;
  /** Record ids and distinctive strings that must not appear in the response. */
  leakTargets: string[];
  /** Existence-oracle probes: the normalized response must equal that of this control request. */
  control?: Request;
  /** Keep this response's packet id under this name, for a later `validate`. */
  keepPacketAs?: string;
  /** The deletion job whose completeness this probe checks. */
  jobKey?: string;
}

/** One step of an episode, run in order; checkpoints are hidden among the other steps. */
export type Step =
  | { type: 'grant'; grant: GrantSpec }
  | { type: 'remove_grant'; grantKey: string; convergence?: Checkpoint }
  | { type: 'delegate'; delegation: DelegationSpec }
  | { type: 'revoke_delegation'; delegationKey: string; convergence?: Checkpoint }
  | { type: 'revoke_capability'; askerKey: string; convergence?: Checkpoint }
  | { type: 'revoke_agent'; agentId: string; convergence?: Checkpoint }
  | { type: 'write'; writer: Asker; memory: MemoryWrite }
  | { type: 'delete'; requester: Asker; recordId: string; jobKey: string }
  | { type: 'forget'; requester: Asker; subjectId: string; jobKey: string }
  /** Waits for the job to be verified (deletion job completeness), with the records it must cover. */
  | { type: 'await_job'; jobKey: string; requester: Asker; recordIds: string[] }
  | { type: 'advance'; ms: number }
  | { type: 'checkpoint'; checkpoint: Checkpoint };

export interface Episode {
  id: string;
  tenant: string;
  domain: Domain;
  /** Every resource of the episode: the admin capability's scopes. */
  resources: Resource[];
  steps: Step[];
}

export const resourceKey = (r: Resource): string => `${r.kind}:${r.id}`;
