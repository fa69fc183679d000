import { keyOf, partsOf } from '@gm/ids';

/**
 * Key layout of the state store. One prefix per deployment (or per test) keeps runs apart
 * in a shared Redis. After the prefix and the key's kind, every part is written by the one
 * injective encoding (`keyOf`, @gm/ids): ids may hold ':', so a plain join would let tenant
 * `acme:x`'s record `y` be tenant `acme`'s record `x:y`.
 */
export class KeySpace {
  constructor(readonly prefix: string) {}
  record = (tenant: string, id: string) => `${this.prefix}rec:${keyOf(tenant, id)}`;
  records = () => `${this.prefix}rec:`;
  /** Under `hist:`, not `rec:`: `records()` lists the record hash by its prefix. */
  recordVersion = (tenant: string, id: string, version: number) => `${this.prefix}hist:${keyOf(tenant, id, String(version))}`;
  subjectRecords = (tenant: string, subject: string) => `${this.prefix}subj:${keyOf(tenant, subject)}`;
  quarantine = (tenant: string) => `${this.prefix}quar:${keyOf(tenant)}`;
  content = (tenant: string, id: string) => `${this.prefix}content:${keyOf(tenant, id)}`;
  contents = () => `${this.prefix}content:`;
  tombstone = (tenant: string, id: string) => `${this.prefix}tomb:${keyOf(tenant, id)}`;
  tombstones = () => `${this.prefix}tomb:`;
  idClaim = (tenant: string, id: string) => `${this.prefix}claim:${keyOf(tenant, id)}`;
  expirySchedule = () => `${this.prefix}expiry`;
  /** By the key write-admission names a subject's state with: a keyed pseudonym (crypto's SnapshotSealer.storageKey), or before those the bus's subject key. */
  admissionState = (stateKey: string) => `${this.prefix}adm:${stateKey}`;
  admissionCheckpoint = (partition: number) => `${this.prefix}adm-at:${partition}`;
  packet = (id: string) => `${this.prefix}packet:${keyOf(id)}`;
  packetsOf = (tenant: string, recordId: string) => `${this.prefix}packets-of:${keyOf(tenant, recordId)}`;
  cache = (key: string) => `${this.prefix}cache:${keyOf(key)}`;
  cachesOf = (tenant: string, recordId: string) => `${this.prefix}caches-of:${keyOf(tenant, recordId)}`;
  cachesOfTenant = (tenant: string) => `${this.prefix}caches-of-tenant:${keyOf(tenant)}`;
  job = (tenant: string, jobId: string) => `${this.prefix}job:${keyOf(tenant, jobId)}`;
  jobIndex = (jobId: string) => `${this.prefix}job-index:${keyOf(jobId)}`;
  openJobs = () => `${this.prefix}jobs-open`;
  /** A tenant's jobs by the time they were requested (score: epoch ms), for listing. */
  jobsOf = (tenant: string) => `${this.prefix}jobs-of:${keyOf(tenant)}`;
  /** The same, for the jobs one principal requested: a requester's listing reads only its own (no position of another's). */
  jobsRequestedBy = (tenant: string, principal: string) => `${this.prefix}jobs-by:${keyOf(tenant, principal)}`;
  /** Jobs that kept content for a legal hold: what releasing the hold must purge. */
  jobsHeldBy = (tenant: string, holdId: string) => `${this.prefix}jobs-held:${keyOf(tenant, holdId)}`;
  /** One record's commitment opening of one deletion job (kept for the requester, with a TTL). */
  receiptOpening = (tenant: string, jobId: string, recordId: string) => `${this.prefix}receipt-opening:${keyOf(tenant, jobId, recordId)}`;
  policyRevision = (tenant: string) => `${this.prefix}rev:${keyOf(tenant)}`;
  /** Outside the projection's prefixes: a rebuild clears those and sets this once it has folded (policy-projection.ts). */
  policyLoaded = () => `${this.prefix}policy-loaded`;
  dataGeneration = (tenant: string) => `${this.prefix}gen:${keyOf(tenant)}`;
  revokedCapability = (jti: string) => `${this.prefix}revoked:jti:${keyOf(jti)}`;
  revokedAgent = (tenant: string, agent: string) => `${this.prefix}revoked:agent:${keyOf(tenant, agent)}`;
  revokedDelegate = (tenant: string, agent: string, principal: string) => `${this.prefix}revoked:delegate:${keyOf(tenant, agent, principal)}`;
  revokedCapabilities = () => `${this.prefix}revoked:jti:`;
  /** Policy data (projected from policy.changes): everything under `pol:` is rebuilt by replay. */
  policies = () => `${this.prefix}pol:`;
  policyTenants = () => `${this.prefix}pol:tenants`;
  policyApplied = (tenant: string, changeId: string) => `${this.prefix}pol:applied:${keyOf(tenant, changeId)}`;
  grant = (tenant: string, id: string) => `${this.prefix}pol:grant:${keyOf(tenant, id)}`;
  grantsOf = (tenant: string) => `${this.prefix}pol:grants:${keyOf(tenant)}`;
  delegation = (tenant: string, id: string) => `${this.prefix}pol:delegation:${keyOf(tenant, id)}`;
  delegationsOf = (tenant: string) => `${this.prefix}pol:delegations:${keyOf(tenant)}`;
  revokedAgentsOf = (tenant: string) => `${this.prefix}pol:revoked-agents:${keyOf(tenant)}`;
  legalHold = (tenant: string, id: string) => `${this.prefix}pol:hold:${keyOf(tenant, id)}`;
  legalHoldsOf = (tenant: string) => `${this.prefix}pol:holds:${keyOf(tenant)}`;
  legalHoldsOfSubject = (tenant: string, subject: string) => `${this.prefix}pol:holds-of:${keyOf(tenant, subject)}`;
  /** The resources (and the tenant) that ever had an admin grant, as `memberOf(kind, id)`: folded from policy.changes. */
  administeredResources = (tenant: string) => `${this.prefix}pol:administered:${keyOf(tenant)}`;
  /** That a resource's first admin grant was taken on the issuer's word (compare-and-set, once ever). */
  adminBootstrap = (tenant: string, kind: string, id: string) => `${this.prefix}boot:${keyOf(tenant, kind, id)}`;
  /** The same claim as stores written before the kind and id were encoded apart kept it (read only). */
  legacyAdminBootstrap = (tenant: string, kind: string, id: string) => `${this.prefix}boot:${keyOf(tenant, `${kind}:${id}`)}`;
  /** What the issuer signed (jti → tenant, agent, expiry), so a revocation knows how long to last. */
  issuedCapability = (jti: string) => `${this.prefix}cap:${keyOf(jti)}`;
}

export const SEP = '\u0000';

/** A composite set member, by the same encoding as keys. */
export const memberOf = (...parts: string[]): string => keyOf(...parts);

/** The parts of a member: by the encoding, or — a member stored before it — split at SEP. */
export const partsOfMember = (member: string): string[] => (member.includes(SEP) ? member.split(SEP) : partsOf(member));
