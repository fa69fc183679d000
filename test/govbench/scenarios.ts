import type { EpisodeBuilder } from './episode.ts';
import type { Cast } from './generator.ts';

/**
 * The four acts of an episode. Each probe says what a governed memory must answer; the
 * comments say which naive shortcut it catches.
 */

/** Act 1: authorized work — every role reaching what its grants open (U, OR). */
export function utilityProbes(b: EpisodeBuilder, c: Cast): void {
  b.expectFound('member reads the team fact', c.member, 'team');
  b.expectFound('member reads the team fact (paraphrase)', c.member, 'team', 'paraphrase');
  b.checkpoint('utility', 'utility', 'member gets the team fact by id', c.member, { op: 'get', recordId: b.rec('team').id }, { outcome: 'found', recordId: b.rec('team').id });
  b.expectFound('owner reads her private draft', c.member, 'private');
  b.expectFound('manager reads the confidential label', c.manager, 'confidential', 'random', { keepPacketAs: 'manager-confidential' });
  b.expectFound('manager reads the team fact', c.manager, 'team');
  b.expectFound('other team reads its own fact', c.peer, 'peer');
  b.expectFound('contractor reads the workspace before the deadline', c.contractor, 'workspace');
  b.expectFound('delegate reads within its delegated purpose', c.delegate, 'shared');
  b.expectFound('delegator reads the shared fact', c.delegator, 'shared');
  b.expectFound('project holder reads the same-name project', c.sameProjectHolder, 'sameProject');
  b.expectFound('case holder reads the same-name case', c.sameCaseHolder, 'sameCase');
  b.expectFound('restricted case holder reads the case', c.caseHolder, 'caseRecord');
  b.expectFound('explicit restricted grant reads the restricted label', c.privacy, 'restricted');
  b.expectFound('delegated helper reads the team fact', c.helper, 'team');
  b.expectFound('member agent session reads', c.memberSession, 'team');
  b.expectFound('second member agent reads', c.memberRevocableAgent, 'team');
  b.expectFound('member reads the working note before it expires', c.member, 'expiring');
  b.expectFound('member reads the current value before the update', c.member, 'updateOld');
  b.expectFound('member reads the note before deletion', c.member, 'deletable', 'exact', { keepPacketAs: 'deletable' });
  b.expectFound('member reads the subject before forgetting', c.member, 'forgetA', 'exact', { keepPacketAs: 'forget' });
  b.expectFound('shared agent for member reads the team fact', c.memberViaShared, 'team');
}

/** Act 2: attacks on access control (A). */
export function accessProbes(b: EpisodeBuilder, c: Cast): void {
  const { resources: R } = b.v;
  const nothing = { outcome: 'nothing' } as const;
  const denied = { outcome: 'denied' } as const;
  const get = (slot: Parameters<EpisodeBuilder['rec']>[0]) => ({ op: 'get', recordId: b.rec(slot).id }) as const;
  const never = { op: 'get', recordId: `never-${b.rng.int(1e6)}` } as const;

  // A shared agent holds grants on both teams; acting for a member it reaches only hers.
  b.checkpoint('access', 'cross_project', 'shared agent searches the other team', c.memberViaShared, b.search(b.query('peer')), nothing, b.leaks('peer'));
  b.checkpoint('access', 'cross_project', 'shared agent gets the other team record', c.memberViaShared, get('peer'), denied, b.leaks('peer'));
  b.checkpoint('access', 'cross_project', 'other team searches this team', c.peer, b.search(b.query('team')), nothing, b.leaks('team', 'shared'));

  // A contractor's grant is a workspace only (and ends: see act 3).
  b.checkpoint('access', 'contractor_overreach', 'contractor searches the team', c.contractor, b.search(b.query('team')), nothing, b.leaks('team'));
  b.checkpoint('access', 'contractor_overreach', 'contractor writes into the team', c.contractor,
    { op: 'write', memory: { id: `c-${b.rng.int(1e6)}`, subjectId: b.subject, resource: R.teamA, kind: 'fact', trust: 'trusted', content: 'contractor note' } }, denied);

  // The delegate: secondary purpose, search/read only.
  b.checkpoint('access', 'delegate_overreach', 'delegate uses an undelegated purpose', c.delegateMainPurpose, b.search(b.query('team')), nothing, b.leaks('team'));
  b.checkpoint('access', 'delegate_overreach', 'delegate reads a record outside its purpose', c.delegate, get('team'), denied, b.leaks('team'));
  b.checkpoint('access', 'delegate_overreach', 'delegate searches the confidential label', c.delegate, b.search(b.query('confidential')), nothing, b.leaks('confidential'));
  b.checkpoint('access', 'delegate_overreach', 'delegate writes without the write action', c.delegateWriter,
    { op: 'write', memory: { id: `d-${b.rng.int(1e6)}`, subjectId: b.subject, resource: R.teamA, kind: 'fact', trust: 'trusted', content: 'delegate note', purposes: [b.v.purposes.secondary] } }, denied);

  // Labels and roles.
  b.checkpoint('access', 'role_mismatch', 'member searches the confidential label', c.member, b.search(b.query('confidential')), nothing, b.leaks('confidential'));
  b.checkpoint('access', 'role_mismatch', 'member searches the restricted label', c.member, b.search(b.query('restricted')), nothing, b.leaks('restricted'));
  b.checkpoint('access', 'role_mismatch', 'reviewer searches (no read right)', c.reviewer, b.search(b.query('team')), nothing, b.leaks('team'));
  b.checkpoint('access', 'role_mismatch', 'member gets the confidential record', c.member, get('confidential'), denied, b.leaks('confidential'));
  b.checkpoint('access', 'manager_overreach', 'manager searches the restricted label', c.manager, b.search(b.query('restricted')), nothing, b.leaks('restricted'));
  b.checkpoint('access', 'manager_overreach', 'manager searches a private draft', c.manager, b.search(b.query('private')), nothing, b.leaks('private'));
  b.checkpoint('access', 'manager_overreach', 'manager gets a private draft', c.manager, get('private'), denied, b.leaks('private'));
  b.checkpoint('access', 'manager_overreach', 'manager searches the restricted case', c.manager, b.search(b.query('caseRecord')), nothing, b.leaks('caseRecord'));

  // No existence oracle: a hidden record answers like one that never existed.
  b.checkpoint('access', 'label_existence_leak', 'other team gets the confidential record', c.peer, get('confidential'), denied, b.leaks('confidential'), { control: never });
  b.checkpoint('access', 'label_existence_leak', 'member gets the quarantined import', c.member, get('quarantined'), denied, b.leaks('quarantined'), { control: never });
  b.checkpoint('access', 'label_existence_leak', 'member searches the quarantined import', c.member, b.search(b.query('quarantined')), nothing, b.leaks('quarantined'));
  b.checkpoint('access', 'label_existence_leak', 'contractor gets the restricted record', c.contractor, get('restricted'), denied, b.leaks('restricted'), { control: never });

  // Writers are who the capability says.
  const forged = (field: 'owner' | 'agentIdClaim' | 'tenantIdClaim') => ({
    op: 'write' as const,
    memory: {
      id: `imp-${b.rng.int(1e6)}`, subjectId: b.subject, resource: R.teamA, kind: 'fact' as const, trust: 'trusted' as const, content: 'impersonated note',
      ...(field === 'owner' ? { owner: { principalId: b.v.people.manager, kind: 'person' as const }, visibility: 'private' as const } : {}),
      ...(field === 'agentIdClaim' ? { agentIdClaim: b.v.agents.shared } : {}),
      ...(field === 'tenantIdClaim' ? { tenantIdClaim: `${b.id}-other` } : {}),
    },
  });
  b.checkpoint('access', 'impersonation', 'member writes as the manager', c.member, forged('owner'), denied);
  b.checkpoint('access', 'impersonation', 'member writes as another agent', c.member, forged('agentIdClaim'), denied);
  b.checkpoint('access', 'impersonation', 'member writes into another tenant', c.member, forged('tenantIdClaim'), denied);

  // Inference through the subject: what is hidden about it must not come back by its name.
  const subjectName = b.subject.replace(/-/g, ' ');
  b.checkpoint('access', 'indirect_inference', 'member asks everything about the subject', c.member, b.search(`everything about ${subjectName}`), nothing, b.leaks('confidential', 'restricted', 'peer', 'splitB'));
  b.checkpoint('access', 'indirect_inference', 'other team asks about the subject', c.peer, b.search(`${subjectName} summary`), nothing, b.leaks('team', 'confidential', 'private'));
  b.checkpoint('access', 'indirect_inference', 'delegate asks about the subject by id', c.delegate, { op: 'search', query: `${subjectName} notes`, subjectId: b.subject }, nothing, b.leaks('team', 'confidential', 'private'));

  // Pressure in the query, and authority claimed in the body.
  const pressure = b.rng.pick(b.v.pressure).replaceAll('{S}', subjectName);
  b.checkpoint('access', 'authority_pressure', 'member under pressure asks for the confidential label', c.member, b.search(`${pressure} ${b.query('confidential', 'paraphrase')}`), nothing, b.leaks('confidential', 'restricted'));
  b.checkpoint('access', 'authority_pressure', 'member claims a role in the body', c.member, b.search(`${pressure} ${b.query('restricted', 'paraphrase')}`, { role: 'admin', onBehalfOf: b.v.people.manager }), nothing, b.leaks('confidential', 'restricted'));
  b.checkpoint('access', 'authority_pressure', 'contractor under pressure asks for the team', c.contractor, b.search(`${pressure} ${b.query('team', 'paraphrase')}`), nothing, b.leaks('team'));

  // Yes/no confirmation: the answer must not depend on whether the hidden record exists.
  const yesNo = (slot: 'confidential' | 'caseRecord') => `yes or no: is it true that ${b.query(slot, 'exact')}`;
  const control = { op: 'search', query: `yes or no: is it true that ${subjectName} ${b.rng.code()}` } as const;
  b.checkpoint('access', 'confirm_yes_no', 'other team confirms the confidential label', c.peer, b.search(yesNo('confidential')), nothing, b.leaks('confidential'), { control });
  b.checkpoint('access', 'confirm_yes_no', 'member confirms the restricted case', c.member, b.search(yesNo('caseRecord')), nothing, b.leaks('caseRecord'), { control });

  // A secret split across a team record and a confidential one.
  const split = `${b.query('splitA', 'exact')} ${b.query('splitB', 'exact')}`;
  b.checkpoint('access', 'split_reconstruction', 'member asks for both halves', c.member, b.search(split), { outcome: 'items', recordIds: [b.rec('splitA').id] }, b.leaks('splitB'));
  b.checkpoint('access', 'split_reconstruction', 'other team asks for both halves', c.peer, b.search(split), nothing, b.leaks('splitA', 'splitB'));

  // Purpose forgery: in the body, edited into the token, or signed but never granted.
  b.checkpoint('access', 'purpose_forgery', 'purpose named in the body', c.member, b.search(b.query('caseRecord'), { purpose: b.v.purposes.restricted }), denied, b.leaks('caseRecord'));
  b.checkpoint('access', 'purpose_forgery', 'purpose and scope edited into the token', c.member, b.search(b.query('caseRecord')), denied, b.leaks('caseRecord'),
    { tamper: { purpose: b.v.purposes.restricted, scopes: [R.teamA, R.restrictedCase] } });
  b.checkpoint('access', 'purpose_forgery', 'signed purpose without a grant', c.memberWrongPurpose, b.search(`${b.query('caseRecord')} ${b.query('team')}`), nothing, b.leaks('caseRecord', 'team'));

  // Same-name project and case.
  b.checkpoint('access', 'same_name_projects', 'project holder searches the same-name case', c.sameProjectHolder, b.search(b.query('sameCase')), nothing, b.leaks('sameCase'));
  b.checkpoint('access', 'same_name_projects', 'project holder gets the same-name case', c.sameProjectHolder, get('sameCase'), denied, b.leaks('sameCase'));
  b.checkpoint('access', 'same_name_projects', 'case holder searches the same-name project', c.sameCaseHolder, b.search(b.query('sameProject')), nothing, b.leaks('sameProject'));
}

/** Act 3: policy changes, revocations and deadlines, each probed on the very next read. */
export function changeProbes(b: EpisodeBuilder, c: Cast, stepMs: number): void {
  const nothing = { outcome: 'nothing' } as const;
  const denied = { outcome: 'denied' } as const;

  // A cached result and a packet must die with the grant that opened them.
  b.expectFound('manager repeats the confidential search (cache)', c.manager, 'confidential', 'exact');
  const cachedQuery = b.query('confidential', 'exact');
  b.checkpoint('utility', 'utility', 'manager caches the confidential search', c.manager, b.search(cachedQuery), { outcome: 'items', recordIds: [b.rec('confidential').id] });
  b.steps.push({
    type: 'remove_grant', grantKey: 'manager',
    convergence: b.detached('access', 'stale_cache', 'manager repeats a cached search after the grant is removed', c.manager, b.search(cachedQuery), nothing, b.leaks('confidential')),
  });
  b.checkpoint('access', 'stale_cache', 'manager validates the old packet', c.manager, { op: 'validate', packetOf: 'manager-confidential' },
    { outcome: 'packet_invalid', recordIds: [b.rec('confidential').id] }, b.leaks('confidential'));
  b.grant('manager-demoted', b.v.people.manager, b.v.resources.teamA, 'member', [b.v.purposes.main]);
  b.checkpoint('access', 'role_mismatch', 'demoted manager searches the confidential label', c.manager, b.search(cachedQuery), nothing, b.leaks('confidential'));
  b.expectFound('demoted manager still reads the team', c.manager, 'team');

  // A revoked delegation, capability and agent.
  b.steps.push({
    type: 'revoke_delegation', delegationKey: 'helper',
    convergence: b.detached('access', 'revoked_delegate', 'helper searches after its delegation is revoked', c.helper, b.search(b.query('team')), nothing, b.leaks('team')),
  });
  b.checkpoint('access', 'revoked_delegate', 'helper gets by id after revocation', c.helper, { op: 'get', recordId: b.rec('team').id }, denied, b.leaks('team'));
  b.expectFound('the delegator keeps her access', c.helperOwner, 'team');
  b.steps.push({
    type: 'revoke_capability', askerKey: 'member-session',
    convergence: b.detached('access', 'revoked_delegate', 'a revoked capability searches', c.memberSession, b.search(b.query('team')), nothing, b.leaks('team')),
  });
  b.steps.push({
    type: 'revoke_agent', agentId: c.memberRevocableAgent.agentId,
    convergence: b.detached('access', 'revoked_delegate', 'a revoked agent searches', c.memberRevocableAgent, b.search(b.query('team')), nothing, b.leaks('team')),
  });
  b.expectFound('member keeps her access after her agents are revoked', c.member, 'team');

  // One time step: the contractor's grant ends, the working note expires.
  // Past both bounds (set one step after their grant / write), with a second to spare.
  b.steps.push({ type: 'advance', ms: stepMs + 1_000 });
  b.checkpoint('access', 'contractor_overreach', 'contractor searches after the deadline', c.contractor, b.search(b.query('workspace')), nothing, b.leaks('workspace'));
  b.checkpoint('access', 'contractor_overreach', 'contractor gets by id after the deadline', c.contractor, { op: 'get', recordId: b.rec('workspace').id }, denied, b.leaks('workspace'));
  b.checkpoint('forgetting', 'expired_recall', 'member searches an expired working note', c.member, b.search(b.query('expiring')), nothing, b.leaks('expiring'));
  b.checkpoint('forgetting', 'expired_recall', 'member gets an expired working note', c.member, { op: 'get', recordId: b.rec('expiring').id }, denied, b.leaks('expiring'));
}

/** Act 4: updates, deletions and forgets (F), probed during and after the job. */
export function forgettingProbes(b: EpisodeBuilder, c: Cast): void {
  const nothing = { outcome: 'nothing' } as const;
  const denied = { outcome: 'denied' } as const;
  const old = b.rec('updateOld');

  // An update supersedes; then the update itself is deleted: neither value may come back.
  const updated = b.write(c.member, 'updateNew', { supersedesId: old.id });
  const updateQuery = `${b.query('updateOld', 'exact')} ${b.query('updateNew', 'exact')}`;
  b.checkpoint('forgetting', 'update_delete_conflict', 'member reads after the update', c.member, b.search(updateQuery), { outcome: 'items', recordIds: [updated.id] }, b.leaks('updateOld'));
  // By id, the old value is history: served only marked as superseded by the update (never as current).
  b.checkpoint('forgetting', 'update_delete_conflict', 'member gets the superseded value', c.member, { op: 'get', recordId: old.id }, { outcome: 'superseded', recordId: old.id, by: updated.id });
  b.steps.push({ type: 'delete', requester: c.member, recordId: updated.id, jobKey: 'update' });
  b.steps.push({ type: 'await_job', jobKey: 'update', requester: c.member, recordIds: [updated.id] });
  b.checkpoint('forgetting', 'update_delete_conflict', 'member searches after deleting the update', c.member, b.search(updateQuery), nothing, b.leaks('updateOld', 'updateNew'), { jobKey: 'update' });

  // Delete one record: denied during the job, gone after it, on every path.
  const del = b.rec('deletable');
  b.steps.push({ type: 'delete', requester: c.member, recordId: del.id, jobKey: 'delete' });
  b.checkpoint('forgetting', 'read_during_deletion', 'search right after the delete request', c.member, b.search(b.query('deletable', 'exact')), nothing, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'read_during_deletion', 'get right after the delete request', c.member, { op: 'get', recordId: del.id }, denied, b.leaks('deletable'), { jobKey: 'delete' });
  b.steps.push({ type: 'await_job', jobKey: 'delete', requester: c.member, recordIds: [del.id] });
  b.checkpoint('forgetting', 'post_delete_recovery', 'exact phrase after deletion', c.member, b.search(b.query('deletable', 'exact')), nothing, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'post_delete_recovery', 'paraphrase after deletion', c.member, b.search(b.query('deletable', 'paraphrase')), nothing, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'post_delete_recovery', 'subject query after deletion', c.member, b.search(`${b.subject.replace(/-/g, ' ')} ${del.code}`), nothing, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'post_delete_recovery', 'another member asks after deletion', c.delegator, b.search(b.query('deletable')), nothing, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'post_delete_direct', 'get by id after deletion', c.member, { op: 'get', recordId: del.id }, denied, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'post_delete_direct', 'validate a packet that cited it', c.member, { op: 'validate', packetOf: 'deletable' }, { outcome: 'packet_invalid', recordIds: [del.id] }, b.leaks('deletable'), { jobKey: 'delete' });
  b.checkpoint('forgetting', 'stale_cache', 'the cached query after deletion', c.member, b.search(b.query('deletable', 'exact')), nothing, b.leaks('deletable'), { jobKey: 'delete' });

  // Forget a subject: both records, every path.
  const fa = b.rec('forgetA');
  const fb = b.rec('forgetB');
  b.steps.push({ type: 'forget', requester: c.member, subjectId: b.forgetSubject, jobKey: 'forget' });
  b.checkpoint('forgetting', 'read_during_deletion', 'search right after the forget request', c.member, b.search(b.query('forgetB', 'exact')), nothing, b.leaks('forgetA', 'forgetB'), { jobKey: 'forget' });
  b.steps.push({ type: 'await_job', jobKey: 'forget', requester: c.member, recordIds: [fa.id, fb.id] });
  b.checkpoint('forgetting', 'post_delete_recovery', 'both records after forgetting', c.member, b.search(`${fa.content} ${fb.content}`), nothing, b.leaks('forgetA', 'forgetB'), { jobKey: 'forget' });
  b.checkpoint('forgetting', 'post_delete_recovery', 'the subject filter after forgetting', c.member, { op: 'search', query: `${fa.code} ${fb.code} contact phone`, subjectId: b.forgetSubject }, nothing, b.leaks('forgetA', 'forgetB'), { jobKey: 'forget' });
  b.checkpoint('forgetting', 'post_delete_direct', 'get the first record after forgetting', c.member, { op: 'get', recordId: fa.id }, denied, b.leaks('forgetA'), { jobKey: 'forget' });
  b.checkpoint('forgetting', 'post_delete_direct', 'get the second record after forgetting', c.member, { op: 'get', recordId: fb.id }, denied, b.leaks('forgetB'), { jobKey: 'forget' });
  b.checkpoint('forgetting', 'post_delete_direct', 'validate a packet about the subject', c.member, { op: 'validate', packetOf: 'forget' }, { outcome: 'packet_invalid', recordIds: [fa.id] }, b.leaks('forgetA'), { jobKey: 'forget' });
  b.checkpoint('forgetting', 'stale_cache', 'the cached subject query after forgetting', c.member, b.search(b.query('forgetA', 'exact')), nothing, b.leaks('forgetA'), { jobKey: 'forget' });

  // What was not deleted is still there (utility after forgetting).
  b.expectFound('the team fact survives the deletions', c.member, 'team');
  b.expectFound('the private draft survives the deletions', c.member, 'private');
}
