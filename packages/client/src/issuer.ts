import type { z } from 'zod';
import type { IssueCapabilityRequest, IssueCapabilityResponse } from '@gm/contracts';
import { Transport, type IssuedToken } from './transport.ts';

export type CapabilityRequest = z.input<typeof IssueCapabilityRequest>;

export interface IssuerOptions {
  baseUrl: string;
  /** The deployment's issuer credential: only a trusted backend (an IdP bridge, an admin tool) holds it, never an agent. */
  issuerCredential: string;
  fetch?: typeof fetch;
}

/** POST /v1/capabilities with the issuer credential. */
export async function issueCapability(options: IssuerOptions, request: CapabilityRequest): Promise<IssueCapabilityResponse> {
  const transport = new Transport({ baseUrl: options.baseUrl, capability: '', ...(options.fetch ? { fetch: options.fetch } : {}) });
  const answer = await transport.send<IssueCapabilityResponse>({
    method: 'POST', path: '/v1/capabilities', body: request, headers: { authorization: `Bearer ${options.issuerCredential}` },
    anonymous: true, safeToRetry: false,
  });
  return answer.body;
}

/**
 * A capability source for `MemoryClient` that issues a fresh capability for `request` each time
 * the last one nears its expiry: for a backend that holds the issuer credential and acts for
 * its agents. An agent given a capability by someone else passes the token itself instead.
 */
export const issuedCapabilities = (options: IssuerOptions, request: CapabilityRequest) =>
  (): Promise<IssuedToken> => issueCapability(options, request);
