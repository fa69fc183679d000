import { parseReply, type GovClient, type Reply } from './client.ts';
import type { Asker, Resource } from './model.ts';

/**
 * The naive baseline: a memory the way many retrieval systems are built — one shared keyword
 * index over every tenant, "search everything, filter after", rights looked up once when the
 * token is issued, metadata taken from the request, derived per-subject summaries, and a cache
 * without a policy revision. It answers the same API routes as our runtimes, so the same
 * scenario stream, runner and scoring apply. Every shortcut below is one a real system takes:
 * - tokens are decoded, not verified; revocations are recorded, never checked;
 * - a token's scopes are filtered once, at issue, by any grant of the agent *or* the principal
 *   (role, purpose, sensitivity, deadline and delegation ignored), matching resources by name;
 * - the filter after retrieval checks tenant, resource name and private ownership only;
 * - deletes and forgets remove the primary copy; the index, summaries and cache keep theirs;
 * - superseded, expired and quarantined records stay retrievable;
 * - a hidden record answers 403 (a never-existing one 404), and searches report total hits.
 */
export function naiveClient(): GovClient {
  let now = Date.parse('2026-11-30T08:00:00.000Z');
  let seq = 0;
  const grants = new Map<string, { tenant: string; principal: string; resourceId: string }>();
  const primary = new Map<string, Doc>();
  const index: Doc[] = [];
  const summaries = new Map<string, Doc>();
  const cache = new Map<string, { at: number; reply: Reply }>();
  const packets = new Map<string, string[]>();
  const jobs = new Map<string, Record<string, unknown>>();

  const reply = (status: number, body: unknown): Reply => parseReply(status, JSON.stringify(body));
  const claimsOf = (token: string): Claims | undefined => {
    try {
      return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Claims;
    } catch {
      return undefined;
    }
  };
  const visible = (c: Claims, d: Doc, authority: boolean) =>
    d.tenant === c.tenant && c.scopes.some((s) => s.id === d.resource.id) && (authority || d.visibility !== 'private' || d.owner === c.act);

  const summarise = (d: Doc) => {
    const key = `${d.tenant}/${d.subjectId}`;
    const summary = summaries.get(key);
    if (summary) summary.content += ` | ${d.content}`;
    else {
      const created: Doc = { ...d, id: `summary-${d.subjectId}`, visibility: 'team', content: `Summary of ${d.subjectId}: ${d.content}` };
      summaries.set(key, created);
      index.push(created);
    }
  };

  const search = (c: Claims, body: Record<string, unknown>): Reply => {
    const query = String(body.query ?? '');
    const key = `${c.tenant}/${c.act}/${query}/${String(body.subjectId ?? '')}`;
    const cached = cache.get(key);
    if (cached && now - cached.at < 60_000) return cached.reply;
    const terms = new Set(words(query));
    const scored = index
      .map((d) => ({ d, score: words(d.content).filter((w, i, all) => terms.has(w) && all.indexOf(w) === i).length }))
      .filter((s) => s.score > 0 && (body.subjectId === undefined || s.d.subjectId === body.subjectId))
      .sort((a, b) => b.score - a.score)
      .slice(0, Number(body.limit ?? 10));
    const authority = body.role === 'admin' || body.role === 'manager';
    const items = scored.filter((s) => visible(c, s.d, authority)).map((s) => ({ recordId: s.d.id, excerpt: s.d.content, provenanceRefs: [] }));
    const packetId = `pkt-${(seq += 1)}`;
    packets.set(packetId, items.map((i) => i.recordId));
    const answer = reply(200, { packetId, total: scored.length, items });
    cache.set(key, { at: now, reply: answer });
    return answer;
  };

  const write = (c: Claims, body: Record<string, unknown>): Reply => {
    const resource = body.resource as Resource;
    if (!c.actions.includes('write') || !c.scopes.some((s) => s.id === resource.id)) return reply(403, { error: 'forbidden' });
    const owner = (body.owner as { principalId?: string } | undefined)?.principalId ?? c.act;
    const doc: Doc = {
      tenant: String(body.tenantId ?? c.tenant), id: String(body.id ?? `m-${(seq += 1)}`), subjectId: String(body.subjectId), resource,
      visibility: String(body.visibility ?? 'team'), owner, content: String(body.content), status: 'active',
    };
    if (typeof body.supersedesId === 'string') {
      const old = primary.get(`${doc.tenant}/${body.supersedesId}`);
      if (old) old.status = 'superseded';
    }
    primary.set(`${doc.tenant}/${doc.id}`, doc);
    index.push({ ...doc });
    summarise(doc);
    return reply(201, { id: doc.id, version: 1, status: 'active' });
  };

  const remove = (c: Claims, ids: string[], subjectId: string): Reply => {
    for (const id of ids) primary.delete(`${c.tenant}/${id}`);
    const jobId = `job-${(seq += 1)}`;
    jobs.set(jobId, { jobId, tenant: c.tenant, subjectId, recordIds: ids, status: 'verified', evidence: [{ target: 'primary', status: 'done' }] });
    return reply(202, { jobId });
  };

  const route = (method: string, path: string, c: Claims, body: Record<string, unknown>): Reply => {
    const [, v1, what, id, verb] = path.split('/');
    if (v1 !== 'v1') return reply(404, { error: 'not found' });
    if (method === 'POST' && what === 'grants') {
      const grantId = String(body.grantId ?? `g-${(seq += 1)}`);
      const principal = body.principal as { id: string };
      grants.set(grantId, { tenant: c.tenant, principal: principal.id, resourceId: (body.resource as Resource).id });
      return reply(201, { grantId, policyRevision: seq });
    }
    if (method === 'DELETE' && what === 'grants') return grants.delete(String(id)), reply(202, { policyRevision: seq });
    if (what === 'delegations') return verb === 'revoke' ? reply(202, { policyRevision: seq }) : reply(201, { delegationId: `d-${(seq += 1)}`, policyRevision: seq });
    if (what === 'capabilities' || what === 'agents') return reply(202, { policyRevision: seq });
    if (method === 'POST' && what === 'memories' && id === undefined) return write(c, body);
    if (method === 'POST' && what === 'search') return search(c, body);
    if (method === 'POST' && what === 'packets') return reply(200, { valid: true, items: (packets.get(String(id)) ?? []).map((recordId) => ({ recordId, valid: true })) });
    if (what === 'memories' && id !== undefined) {
      const doc = primary.get(`${c.tenant}/${id}`);
      if (!doc) return reply(404, { error: 'not found' });
      if (!visible(c, doc, false)) return reply(403, { error: 'forbidden', id });
      if (method === 'DELETE') return remove(c, [doc.id], doc.subjectId);
      return reply(200, { ...doc, resource: doc.resource });
    }
    if (method === 'POST' && what === 'subjects' && verb === 'forget') {
      const ids = [...primary.values()].filter((d) => d.tenant === c.tenant && d.subjectId === id).map((d) => d.id);
      return remove(c, ids, String(id));
    }
    if (what === 'deletion-jobs') return jobs.has(String(id)) ? reply(200, jobs.get(String(id))) : reply(404, { error: 'not found' });
    return reply(404, { error: 'not found' });
  };

  return {
    name: 'naive baseline',
    now: () => now,
    advance: async (ms) => {
      now += ms;
    },
    async issue(tenant: string, asker: Asker) {
      // Rights looked up once, now: any grant of the agent or the principal on a resource of that name.
      const holders = new Set([asker.agentId, asker.principal]);
      const held = [...grants.values()].filter((g) => g.tenant === tenant && holders.has(g.principal));
      const scopes = asker.actions.includes('admin') ? asker.scopes : asker.scopes.filter((s) => held.some((g) => g.resourceId === s.id));
      const jti = `jti-${(seq += 1)}`;
      const claims: Claims = { tenant, sub: asker.agentId, act: asker.principal, scopes, purpose: asker.purpose, actions: asker.actions, jti };
      return { token: `naive.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.unsigned`, jti };
    },
    async call(method, path, token, body) {
      const claims = claimsOf(token);
      if (!claims) return reply(401, { error: 'unauthenticated' });
      return route(method, path, claims, (body ?? {}) as Record<string, unknown>);
    },
    close: async () => undefined,
  };
}

interface Claims { tenant: string; sub: string; act: string; scopes: Resource[]; purpose: string; actions: string[]; jti: string }
interface Doc { tenant: string; id: string; subjectId: string; resource: Resource; visibility: string; owner: string; content: string; status: string }

const words = (text: string): string[] => text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 1);
