/** Time comes in from outside so tests and replay control it. */
export interface Clock {
  now(): Date;
}

/** What every started service returns: close finishes in-flight work, then releases. */
export interface ServiceHandle {
  close(): Promise<void>;
}

/** Identities of the services when they send commands themselves. */
export const serviceActor = (service: string) => ({
  agentId: `svc:${service}`,
  principalId: `svc:${service}`,
  principalKind: 'service' as const,
  runId: `svc:${service}`,
  purpose: 'operations',
});
