/**
 * The authorization hook (design §9.1): before any handler runs, the edge looks the operation up
 * in the one table (`OPERATIONS`, @gm/contracts), authenticates what it names and asks the
 * policy decision point about what it acts on. A handler reads the answer with `authorized()`
 * and never decides who may call it. An operation without a declaration does not run (500).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  AddDelegationRequest, AddGrantRequest, GovernedMemoryError, administersNowOrLater, guardOf, isTenantRef,
  type Action, type Grant, type CapabilityClaims, type DeletionJob, type ForgetWithin, type Guard, type RecordMeta, type ResourceOf,
} from '@gm/contracts';
import { isLive } from '@gm/domain';
import { inScope, requireAction } from '@gm/policy';
import type { CommandOutcome } from '@gm/state-store';
import {
  adminDepsOf, authorizeDelegation, authorizeGrant, authorizeGrantsOf, authorizeTenantAdmin, isTenantAdmin, mayRevokeDelegation,
} from './admin-authz.ts';
import { bearer, checkIssuerCredential } from './auth.ts';
import { DELETION_JOB_GROUPS, READ_YOUR_WRITES_GROUPS } from './command-gateway.ts';
import { awaitConsistency } from './consistency.ts';
import type { BrokerDeps } from './deps.ts';
import { parseBody, pathId } from './http.ts';
import { notFound } from './problem.ts';
import { auditCapability } from './query-audit.ts';
import { partitionOf } from './retrieval.ts';

/** What the hook established for a request, by the kind of resource its operation declares. */
export type Authorized =
  | { on: 'none' }
  | { on: 'partitions'; claims: CapabilityClaims; partitions: string[] }
  | { on: 'record'; claims: CapabilityClaims; record: RecordMeta }
  | { on: 'history'; claims: CapabilityClaims; record: RecordMeta; rejected: boolean }
  | { on: 'subject'; claims: CapabilityClaims; within: ForgetWithin }
  | { on: 'packet'; claims: CapabilityClaims; packetId: string }
  | { on: 'command'; claims: CapabilityClaims; commandId: string; outcome: CommandOutcome }
  | { on: 'job'; claims: CapabilityClaims; job: DeletionJob; tenantAdmin: boolean }
  | { on: 'jobs'; claims: CapabilityClaims; tenantAdmin: boolean; own: boolean }
  | { on: 'grant'; claims: CapabilityClaims; add?: { request: AddGrantRequest; by: 'cedar' | 'bootstrap' }; remove?: { grantId: string } }
  | { on: 'delegation'; claims: CapabilityClaims; add?: AddDelegationRequest; revoke?: { delegationId: string } }
  | { on: 'capability'; claims: CapabilityClaims }
  | { on: 'tenant'; claims: CapabilityClaims };

declare module 'fastify' {
  interface FastifyRequest {
    authorized?: Authorized;
    /** The capability the rate limiter verified for this request (rate-limit-key.ts), if it did. */
    verifiedCapability?: { token: string; claims: CapabilityClaims };
  }
}

/** The hook's answer for this request, of the kind its operation declares (a mismatch is a bug here). */
export function authorized<K extends Authorized['on']>(request: FastifyRequest, on: K): Extract<Authorized, { on: K }> {
  const found = request.authorized;
  if (found?.on !== on) throw new GovernedMemoryError('MEM_INTERNAL', `route authorization: declared ${found?.on ?? 'nothing'}, handler expects ${on}`);
  return found as Extract<Authorized, { on: K }>;
}

/** A Fastify route path in the table's syntax: `:id` → `{id}`, `*` → `{path}`, `::` → `:`; HEAD is a GET. */
export function operationOf(method: string, url: string): { method: string; path: string } {
  const path = url
    .replace(/::/g, '\u0000')
    .replace(/:([A-Za-z]+)/g, '{$1}')
    .replace(/\u0000/g, ':')
    .replace(/\/\*$/, '/{path}');
  return { method: method === 'HEAD' ? 'GET' : method, path: documentPath(path) };
}

/** Every file of the rendered document (the Scalar plugin's routes under /docs/) is one public operation of the table. */
export const documentPath = (path: string): string => (path.startsWith('/docs/') ? '/docs/{path}' : path);

/** Registers the hook on every route; runs after the body is parsed and the query audit's scope is set. */
export function authorizationHook(app: FastifyInstance, deps: BrokerDeps): void {
  const resolve = resolvers(deps);
  app.addHook('preHandler', async (request) => {
    const url = request.routeOptions.url;
    // Unrouted requests reach the not-found handler, which answers 404 or 405 and runs nothing.
    if (url === undefined) return;
    const { method, path } = operationOf(request.method, url);
    const guard: Guard | undefined = guardOf(method, path);
    if (guard === undefined) {
      throw new GovernedMemoryError('MEM_INTERNAL', `${method} ${path} has no authorization declaration`);
    }
    if (guard.auth === 'public') {
      request.authorized = { on: 'none' };
      return;
    }
    if (guard.auth === 'issuer') {
      checkIssuerCredential(request, deps.issuerCredential);
      request.authorized = { on: 'none' };
      return;
    }
    const token = bearer(request);
    const verified = request.verifiedCapability;
    const claims = verified !== undefined && verified.token === token ? verified.claims : await deps.verifier.verify(token, deps.clock.now());
    if (!guard.actions.some((a) => claims.actions.includes(a))) {
      // One action: the usual "does not grant X"; several: none of them.
      if (guard.actions.length === 1 && guard.actions[0] !== undefined) requireAction(claims, guard.actions[0]);
      throw new GovernedMemoryError('CAP_ACTION_DENIED', `the capability grants none of ${guard.actions.map((a) => `"${a}"`).join(', ')}`);
    }
    auditCapability(claims.act.sub, claims.purpose);
    request.authorized = await resolve[guard.on](request, claims, guard.actions);
  });
}

type Resolver = (request: FastifyRequest, claims: CapabilityClaims, actions: readonly Action[]) => Promise<Authorized>;

/** One resolver per kind of resource (`ResourceOf`): what the PDP is asked, and what a refusal answers. */
function resolvers(deps: BrokerDeps): Record<ResourceOf, Resolver> {
  const admin = adminDepsOf(deps);
  const partitionsFor = (claims: CapabilityClaims, action: Action) => deps.pdp.authorizedPartitions({ claims, action });
  const first = (actions: readonly Action[]) => {
    const action = actions[0];
    if (action === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'a declaration without an action');
    return action;
  };

  /** Whether this capability may request a deletion anywhere: a partition, or the tenant (a privacy officer). */
  const requestsDeletion = async (claims: CapabilityClaims): Promise<boolean> =>
    (await partitionsFor(claims, 'request_delete')).length > 0 || deps.pdp.authorizesTenant({ claims, action: 'request_delete' });

  /**
   * The record's partition must be open for the action (a quarantined one, for a reader, where
   * it may review: the history's rule), the record live and not tombstoned. Everything else —
   * unknown, another tenant's, another partition's, deleted, purged — is the same 404 (§6.4).
   */
  const liveRecord = async (claims: CapabilityClaims, action: Action, meta: RecordMeta | null): Promise<RecordMeta> => {
    if (meta === null || !isLive(meta.status)) throw notFound();
    const sight = new Set(await partitionsFor(claims, action));
    if (action === 'read' && meta.status === 'quarantined' && claims.actions.includes('review')) {
      for (const p of await partitionsFor(claims, 'review')) sight.add(p);
    }
    const tombstoned = (await deps.state.tombstones.filterTombstoned(claims.tenant, [meta.id])).size > 0;
    if (tombstoned || meta.tenantId !== claims.tenant || !sight.has(partitionOf(meta))) throw notFound();
    return meta;
  };

  return {
    partitions: async (_request, claims, actions) => ({ on: 'partitions', claims, partitions: await partitionsFor(claims, first(actions)) }),

    /** The record named by the path, under `liveRecord`'s rule. */
    record: async (request, claims, actions) => {
      const action = first(actions);
      const id = pathId(request, 'id');
      if (action === 'read') await awaitConsistency(deps, request, claims.tenant, READ_YOUR_WRITES_GROUPS);
      return { on: 'record', claims, record: await liveRecord(claims, action, await deps.state.records.get(claims.tenant, id)) };
    },

    /**
     * The `record` rule; and besides, a record a reviewer rejected (its current version is the
     * rejection, its content already gone) where the caller may review: the people who saw it in
     * the queue see what became of it. Anything else is the same 404.
     */
    history: async (request, claims, actions) => {
      const action = first(actions);
      const id = pathId(request, 'id');
      await awaitConsistency(deps, request, claims.tenant, READ_YOUR_WRITES_GROUPS);
      const meta = await deps.state.records.get(claims.tenant, id);
      if (meta !== null && meta.status === 'tombstoned' && meta.tenantId === claims.tenant && claims.actions.includes('review')) {
        const current = (await deps.state.history.versions(claims.tenant, id, meta.version)).at(-1);
        if (current?.record.version === meta.version && current.rejection !== undefined) {
          if (!(await partitionsFor(claims, 'review')).includes(partitionOf(meta))) throw notFound();
          return { on: 'history', claims, record: meta, rejected: true };
        }
      }
      return { on: 'history', claims, record: await liveRecord(claims, action, meta), rejected: false };
    },

    /** What a forget may take: the tenant for a privacy officer, else the partitions it may delete in (maybe none: the same 202). */
    subject: async (request, claims) => {
      pathId(request, 'subjectId');
      if (await deps.pdp.authorizesTenant({ claims, action: 'request_delete' })) return { on: 'subject', claims, within: { kind: 'tenant' } };
      return { on: 'subject', claims, within: { kind: 'partitions', partitions: await partitionsFor(claims, 'request_delete') } };
    },

    /**
     * Only the packet's holder (its tenant and principal), through a capability that may still
     * cite somewhere, learns anything of it (a delegate whose delegation leaves out `cite` does
     * not); anyone else gets the 404 of an unknown one.
     */
    packet: async (request, claims) => {
      const packetId = pathId(request, 'id');
      const stored = await deps.state.packets.get(packetId);
      const holder = stored !== null && stored.tenantId === claims.tenant && stored.principalId === claims.act.sub;
      if (!holder || (await partitionsFor(claims, 'cite')).length === 0) throw notFound();
      return { on: 'packet', claims, packetId };
    },

    /**
     * The writing principal's own outcome, for a capability that may still write somewhere (a
     * delegate whose delegation leaves out `write` learns nothing of its principal's writes);
     * anything else answers like an unknown command.
     */
    command: async (request, claims) => {
      const commandId = pathId(request, 'commandId');
      const outcome = await deps.state.commands.get(claims.tenant, commandId);
      const writes = outcome !== null && outcome.principalId === claims.act.sub && (await partitionsFor(claims, 'write')).length > 0;
      if (outcome === null || !writes) throw new GovernedMemoryError('MEM_NOT_FOUND', 'no such command');
      return { on: 'command', claims, commandId, outcome };
    },

    /**
     * The requesting principal's own job — through a capability that may still request deletion
     * somewhere (a delegate whose delegation leaves it out reads none of its principal's jobs) —
     * or any job of the tenant for its administrator; else the 404 of an unknown job.
     */
    job: async (request, claims) => {
      await awaitConsistency(deps, request, claims.tenant, DELETION_JOB_GROUPS);
      const job = await deps.state.jobs.get(claims.tenant, pathId(request, 'id'));
      if (job === null) throw notFound();
      const tenantAdmin = await isTenantAdmin(admin, claims);
      if (!tenantAdmin && (job.requestedBy.principalId !== claims.act.sub || !(await requestsDeletion(claims)))) throw notFound();
      return { on: 'job', claims, job, tenantAdmin };
    },

    jobs: async (_request, claims) => ({ on: 'jobs', claims, tenantAdmin: await isTenantAdmin(admin, claims), own: await requestsDeletion(claims) }),

    /**
     * Adding: `authorizeGrant` on the body's resource (or the bootstrap). Removing: the stored
     * grant's resource, by `authorizeGrantsOf`; a grant the caller may not manage answers like
     * an unknown id (no id oracle). The last administrator's grant of a resource goes only at the
     * tenant's administrator's request, the tenant's last only by configuration (design §6.2).
     */
    grant: async (request, claims) => {
      if (request.method === 'POST') {
        const grant = parseBody(AddGrantRequest, request.body);
        checkTenant(claims, grant);
        if (grant.resource.kind === 'tenant' && grant.resource.id !== claims.tenant) {
          throw new GovernedMemoryError('MEM_IMPERSONATION', 'a grant on the tenant names the capability\'s own tenant');
        }
        return { on: 'grant', claims, add: { request: grant, by: await authorizeGrant(admin, claims, grant) } };
      }
      const grant = await deps.state.policies.grant(claims.tenant, pathId(request, 'id'));
      if (grant === null || !inScope(claims, grant.resource)) throw noSuch('grant');
      try {
        await authorizeGrantsOf(admin, claims, grant.resource);
      } catch (err) {
        if (err instanceof GovernedMemoryError && err.code === 'CAP_SCOPE_DENIED') throw noSuch('grant');
        throw err;
      }
      if (grant.role === 'admin') await checkNotLastAdmin(grant);
      return { on: 'grant', claims, remove: { grantId: grant.grantId } };

      async function checkNotLastAdmin(removed: Grant): Promise<void> {
        const now = deps.clock.now().getTime();
        const others = (await deps.state.policies.grants(claims.tenant))
          .filter((g) => g.grantId !== removed.grantId && administersNowOrLater(g, removed.resource, now));
        if (others.length > 0) return;
        if (isTenantRef(removed.resource)) {
          throw new GovernedMemoryError('MEM_LAST_ADMIN', 'this is the tenant\'s last administrator\'s grant: it is replaced by configuration (MEMORY_BOOTSTRAP_ADMINS), not removed');
        }
        if (!(await isTenantAdmin(admin, claims))) {
          throw new GovernedMemoryError('MEM_LAST_ADMIN', 'this is the resource\'s last administrator\'s grant: only the tenant\'s administrator removes it');
        }
      }
    },

    delegation: async (request, claims) => {
      if (request.routeOptions.url === '/v1/delegations') {
        const delegation = parseBody(AddDelegationRequest, request.body);
        checkTenant(claims, delegation);
        if (delegation.delegatorId !== undefined && delegation.delegatorId !== claims.act.sub) {
          throw new GovernedMemoryError('MEM_IMPERSONATION', 'the delegator is the capability\'s principal');
        }
        await authorizeDelegation(admin, claims, delegation);
        return { on: 'delegation', claims, add: delegation };
      }
      const delegation = await deps.state.policies.delegation(claims.tenant, pathId(request, 'id'));
      if (delegation === null || !(await mayRevokeDelegation(admin, claims, delegation))) throw noSuch('delegation');
      return { on: 'delegation', claims, revoke: { delegationId: delegation.delegationId } };
    },

    /**
     * A caller may always revoke its own capabilities: this one, another issued to the same agent
     * for the same principal, or — the principal acting for itself — any of the principal's. A
     * delegate does not revoke what its principal holds otherwise, nor the same agent id acting for
     * someone else. Another's need `admin` on the tenant. Whether the jti exists is not looked at
     * before this: an unknown jti and another's answer alike.
     */
    capability: async (request, claims) => {
      const jti = pathId(request, 'jti');
      const issued = jti === claims.jti ? null : await deps.state.issuedCapabilities.get(jti);
      const samePrincipal = issued !== null && issued.tenant === claims.tenant && issued.principalId === claims.act.sub;
      const own = jti === claims.jti || (samePrincipal && (issued.agentId === claims.sub || claims.sub === claims.act.sub));
      if (!own) await authorizeTenantAdmin(admin, claims);
      return { on: 'capability', claims };
    },

    tenant: async (_request, claims) => {
      await authorizeTenantAdmin(admin, claims);
      return { on: 'tenant', claims };
    },
  };
}

const noSuch = (what: string) => new GovernedMemoryError('MEM_NOT_FOUND', `no such ${what}`);

/** §5.2 for policy: the tenant comes from the capability; a body naming another is impersonation. */
export function checkTenant(claims: CapabilityClaims, body: { tenant?: string | undefined }): void {
  if (body.tenant !== undefined && body.tenant !== claims.tenant) {
    throw new GovernedMemoryError('MEM_IMPERSONATION', 'the body names another tenant than the capability');
  }
}
