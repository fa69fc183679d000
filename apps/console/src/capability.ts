import { decodeJsonSegment, isObject } from './base64url.ts';

/**
 * What the console shows of a capability: its claims, decoded WITHOUT verifying the signature.
 * They only choose which pages to offer; every request is decided by the server.
 */
export interface CapabilityView {
  tenant: string;
  agentId: string;
  principal: { id: string; kind: string };
  purpose: string;
  actions: string[];
  scopes: string[];
  /** Seconds since the epoch (the JWT `exp`). */
  exp: number;
  jti: string | undefined;
}

export type Decoded = { ok: true; view: CapabilityView } | { ok: false; reason: string };

const COMPACT_JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

export function decodeCapability(token: string): Decoded {
  if (!COMPACT_JWT.test(token)) {
    return { ok: false, reason: 'a capability is a compact JWT (three base64url parts joined by dots); the console accepts nothing else, and never the issuer credential' };
  }
  const [, payloadPart = ''] = token.split('.');
  const claims = decodeJsonSegment(payloadPart);
  if (!isObject(claims)) return { ok: false, reason: 'the JWT payload is not a JSON object' };
  const act = isObject(claims.act) ? claims.act : {};
  const tenant = str(claims.tenant);
  const agentId = str(claims.sub);
  const principalId = str(act.sub);
  const purpose = str(claims.purpose);
  const actions = Array.isArray(claims.actions) ? claims.actions.filter((a): a is string => typeof a === 'string') : undefined;
  if (tenant === undefined || agentId === undefined || principalId === undefined || purpose === undefined || actions === undefined) {
    return { ok: false, reason: 'the JWT is not a capability: it lacks tenant, sub, act, purpose or actions' };
  }
  // exp is shown as a date: beyond ±8.64e12 s no Date holds it.
  if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp) || Math.abs(claims.exp) > 8.64e12) {
    return { ok: false, reason: 'the capability has no usable exp' };
  }
  const scopes = Array.isArray(claims.scopes)
    ? claims.scopes.filter(isObject).map((s) => `${String(s.kind)}:${String(s.id)}`)
    : [];
  return {
    ok: true,
    view: {
      tenant, agentId, principal: { id: principalId, kind: str(act.kind) ?? 'unknown' }, purpose, actions, scopes, exp: claims.exp, jti: str(claims.jti),
    },
  };
}

export const hasAction = (view: CapabilityView, action: string): boolean => view.actions.includes(action);
