/**
 * Key layout of the state store. One prefix per deployment (or per test) keeps runs apart
 * in a shared Redis. Ids cannot contain ':'-free guarantees, so composite members use '\u0000'.
 */
export class KeySpace {
  constructor(readonly prefix: string) {}
  record = (tenant: string, id: string) => `${this.prefix}rec:${tenant}:${id}`;
  records = () => `${this.prefix}rec:`;
  subjectRecords = (tenant: string, subject: string) => `${this.prefix}subj:${tenant}:${subject}`;
  quarantine = (tenant: string) => `${this.prefix}quar:${tenant}`;
  content = (tenant: string, id: string) => `${this.prefix}content:${tenant}:${id}`;
  contents = () => `${this.prefix}content:`;
  tombstone = (tenant: string, id: string) => `${this.prefix}tomb:${tenant}:${id}`;
  tombstones = () => `${this.prefix}tomb:`;
  idClaim = (tenant: string, id: string) => `${this.prefix}claim:${tenant}:${id}`;
  expirySchedule = () => `${this.prefix}expiry`;
  packet = (id: string) => `${this.prefix}packet:${id}`;
  packetsOf = (tenant: string, recordId: string) => `${this.prefix}packets-of:${tenant}:${recordId}`;
  cache = (key: string) => `${this.prefix}cache:${key}`;
  cachesOf = (tenant: string, recordId: string) => `${this.prefix}caches-of:${tenant}:${recordId}`;
  job = (tenant: string, jobId: string) => `${this.prefix}job:${tenant}:${jobId}`;
  jobIndex = (jobId: string) => `${this.prefix}job-index:${jobId}`;
  openJobs = () => `${this.prefix}jobs-open`;
  policyRevision = (tenant: string) => `${this.prefix}rev:${tenant}`;
  dataGeneration = (tenant: string) => `${this.prefix}gen:${tenant}`;
  revokedCapability = (jti: string) => `${this.prefix}revoked:jti:${jti}`;
  revokedAgent = (tenant: string, agent: string) => `${this.prefix}revoked:agent:${tenant}:${agent}`;
}

export const SEP = '\u0000';
