/**
 * Key layout of the state store. One prefix per deployment (or per test) keeps runs apart
 * in a shared Redis. Ids cannot contain ':'-free guarantees, so composite members use '\u0000'.
 */
export class KeySpace {
  constructor(readonly prefix: string) {}
  record = (tenant: string, id: string) => `${this.prefix}rec:${tenant}:${id}`;
  records = () => `${this.prefix}rec:`;
  /** Under `hist:`, not `rec:`: `records()` lists the record hash by its prefix. */
  recordVersion = (tenant: string, id: string, version: number) => `${this.prefix}hist:${tenant}:${id}${SEP}${version}`;
  subjectRecords = (tenant: string, subject: string) => `${this.prefix}subj:${tenant}:${subject}`;
  quarantine = (tenant: string) => `${this.prefix}quar:${tenant}`;
  content = (tenant: string, id: string) => `${this.prefix}content:${tenant}:${id}`;
  contents = () => `${this.prefix}content:`;
  tombstone = (tenant: string, id: string) => `${this.prefix}tomb:${tenant}:${id}`;
  tombstones = () => `${this.prefix}tomb:`;
  idClaim = (tenant: string, id: string) => `${this.prefix}claim:${tenant}:${id}`;
  expirySchedule = () => `${this.prefix}expiry`;
  admissionState = (subjectKey: string) => `${this.prefix}adm:${subjectKey}`;
  admissionCheckpoint = (partition: number) => `${this.prefix}adm-at:${partition}`;
  packet = (id: string) => `${this.prefix}packet:${id}`;
  packetsOf = (tenant: string, recordId: string) => `${this.prefix}packets-of:${tenant}:${recordId}`;
  cache = (key: string) => `${this.prefix}cache:${key}`;
  cachesOf = (tenant: string, recordId: string) => `${this.prefix}caches-of:${tenant}:${recordId}`;
  cachesOfTenant = (tenant: string) => `${this.prefix}caches-of-tenant:${tenant}`;
  job = (tenant: string, jobId: string) => `${this.prefix}job:${tenant}:${jobId}`;
  jobIndex = (jobId: string) => `${this.prefix}job-index:${jobId}`;
  openJobs = () => `${this.prefix}jobs-open`;
  /** A tenant's jobs by the time they were requested (score: epoch ms), for listing. */
  jobsOf = (tenant: string) => `${this.prefix}jobs-of:${tenant}`;
  /** Jobs that kept content for a legal hold: what releasing the hold must purge. */
  jobsHeldBy = (tenant: string, holdId: string) => `${this.prefix}jobs-held:${tenant}:${holdId}`;
  /** One record's commitment opening of one deletion job (kept for the requester, with a TTL). */
  receiptOpening = (tenant: string, jobId: string, recordId: string) => `${this.prefix}receipt-opening:${tenant}${SEP}${jobId}${SEP}${recordId}`;
  policyRevision = (tenant: string) => `${this.prefix}rev:${tenant}`;
  dataGeneration = (tenant: string) => `${this.prefix}gen:${tenant}`;
  revokedCapability = (jti: string) => `${this.prefix}revoked:jti:${jti}`;
  revokedAgent = (tenant: string, agent: string) => `${this.prefix}revoked:agent:${tenant}:${agent}`;
  revokedDelegate = (tenant: string, agent: string, principal: string) => `${this.prefix}revoked:delegate:${tenant}:${agent}${SEP}${principal}`;
  revokedCapabilities = () => `${this.prefix}revoked:jti:`;
  /** Policy data (projected from policy.changes): everything under `pol:` is rebuilt by replay. */
  policies = () => `${this.prefix}pol:`;
  policyTenants = () => `${this.prefix}pol:tenants`;
  policyApplied = (tenant: string, changeId: string) => `${this.prefix}pol:applied:${tenant}:${changeId}`;
  grant = (tenant: string, id: string) => `${this.prefix}pol:grant:${tenant}:${id}`;
  grantsOf = (tenant: string) => `${this.prefix}pol:grants:${tenant}`;
  delegation = (tenant: string, id: string) => `${this.prefix}pol:delegation:${tenant}:${id}`;
  delegationsOf = (tenant: string) => `${this.prefix}pol:delegations:${tenant}`;
  revokedAgentsOf = (tenant: string) => `${this.prefix}pol:revoked-agents:${tenant}`;
  legalHold = (tenant: string, id: string) => `${this.prefix}pol:hold:${tenant}:${id}`;
  legalHoldsOf = (tenant: string) => `${this.prefix}pol:holds:${tenant}`;
  legalHoldsOfSubject = (tenant: string, subject: string) => `${this.prefix}pol:holds-of:${tenant}:${subject}`;
  /** Who took a resource's first admin grant on the issuer's word (compare-and-set). */
  adminBootstrap = (tenant: string, resource: string) => `${this.prefix}boot:${tenant}${SEP}${resource}`;
  /** What the issuer signed (jti → tenant, agent, expiry), so a revocation knows how long to last. */
  issuedCapability = (jti: string) => `${this.prefix}cap:${jti}`;
}

export const SEP = '\u0000';
