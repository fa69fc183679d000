import { VOCABS } from './domains/index.ts';
import { EpisodeBuilder } from './episode.ts';
import { DOMAINS, type Domain, type Episode } from './model.ts';
import { Rng, subSeed } from './rng.ts';
import { accessProbes, changeProbes, forgettingProbes, utilityProbes } from './scenarios.ts';

export interface GenerateOptions {
  seed: number;
  episodesPerDomain: number;
  domains?: readonly Domain[];
  /**
   * The time step of deadlines and TTLs, ms: a contractor's grant ends and a working note
   * expires within one step. Embedded runs move a test clock; the distributed stack waits.
   */
  stepMs: number;
}

/** Seeded and deterministic: the same options give the same episodes, byte for byte. */
export function generate(options: GenerateOptions): Episode[] {
  const episodes: Episode[] = [];
  for (const domain of options.domains ?? DOMAINS) {
    for (let n = 0; n < options.episodesPerDomain; n += 1) {
      const id = `${domain.slice(0, 3)}-${n}`;
      episodes.push(buildEpisode(new EpisodeBuilder(id, VOCABS[domain], new Rng(subSeed(options.seed, id))), options.stepMs));
    }
  }
  return episodes;
}

/**
 * The cast and the setup of an episode, then its probes in four acts: authorized work,
 * attacks on access control, policy changes and revocations, forgetting.
 */
function buildEpisode(b: EpisodeBuilder, stepMs: number): Episode {
  const { resources: R, people: p, agents: a, purposes: P } = b.v;
  const cast = castOf(b);

  // Grants. The shared assistant agent holds grants on both teams (the confused deputy).
  b.grant('shared-a', a.shared, R.teamA, 'member', [P.main], { kind: 'agent' });
  b.grant('shared-b', a.shared, R.teamB, 'member', [P.main], { kind: 'agent' });
  b.grant('member', p.member, R.teamA, 'member', [P.main]);
  b.grant('peer', p.peer, R.teamB, 'member', [P.main]);
  b.grant('manager', p.manager, R.teamA, 'manager', [P.main]);
  b.grant('contractor', p.contractor, R.workspace, 'member', [P.main], { notAfterInMs: stepMs });
  b.grant('delegator', p.delegator, R.teamA, 'member', [P.main, P.secondary]);
  b.grant('privacy', p.privacy, R.teamA, 'member', [P.main], { restricted: ['restricted'] });
  b.grant('case', p.caseHolder, R.restrictedCase, 'member', [P.restricted], { restricted: ['restricted'] });
  b.grant('same-project', p.sameProjectHolder, R.sameProject, 'member', [P.main]);
  b.grant('same-case', p.sameCaseHolder, R.sameCase, 'member', [P.main]);
  b.grant('reviewer', p.reviewer, R.teamA, 'reviewer', [P.main]);
  b.grant('helper-owner', p.helperOwner, R.teamA, 'member', [P.main]);

  // Delegations: limited scope (a secondary purpose, read-only) and one that gets revoked.
  b.steps.push({ type: 'delegate', delegation: { key: 'delegate', delegator: cast.delegatorSecondary, agentId: a.delegate, resources: [R.teamA], purposes: [P.secondary], actions: ['search', 'read'] } });
  b.steps.push({ type: 'delegate', delegation: { key: 'helper', delegator: cast.helperOwner, agentId: a.helper, resources: [R.teamA], purposes: [P.main], actions: ['search', 'read'] } });

  // Records: the team's facts, a private draft, confidential and restricted labels, the other
  // team, the contractor's workspace, same-name project and case, a restricted case, a record
  // to update, one to delete, a subject to forget, a working note with a short TTL, an
  // untrusted import, and a secret split across a team and a confidential record.
  b.write(cast.member, 'team');
  b.write(cast.delegator, 'shared', { purposes: [P.main, P.secondary] });
  b.write(cast.member, 'private', { visibility: 'private' });
  b.write(cast.manager, 'confidential', { visibility: 'restricted', sensitivity: 'confidential' });
  b.write(cast.privacy, 'restricted', { visibility: 'restricted', sensitivity: 'restricted' });
  b.write(cast.peer, 'peer');
  b.write(cast.contractor, 'workspace');
  b.write(cast.sameProjectHolder, 'sameProject');
  b.write(cast.sameCaseHolder, 'sameCase');
  b.write(cast.caseHolder, 'caseRecord', { visibility: 'restricted', sensitivity: 'restricted', purposes: [P.restricted] });
  b.write(cast.member, 'updateOld');
  b.write(cast.member, 'deletable');
  b.write(cast.member, 'forgetA', { subjectId: b.forgetSubject });
  b.write(cast.member, 'forgetB', { subjectId: b.forgetSubject, kind: 'preference' });
  b.write(cast.member, 'expiring', { kind: 'working_note', expiresInMs: stepMs });
  b.write(cast.member, 'quarantined', { trust: 'untrusted' });
  b.write(cast.member, 'splitA');
  b.write(cast.manager, 'splitB', { visibility: 'restricted', sensitivity: 'confidential' });

  utilityProbes(b, cast);
  accessProbes(b, cast);
  changeProbes(b, cast, stepMs);
  forgettingProbes(b, cast);

  return {
    id: b.id, tenant: b.id, domain: b.domain,
    resources: Object.values(R),
    steps: b.steps,
  };
}

export type Cast = ReturnType<typeof castOf>;

/** Every capability an episode uses; a key names one token, reused like an agent's run. */
function castOf(b: EpisodeBuilder) {
  const { resources: R, people: p, agents: a, purposes: P } = b.v;
  const read = ['search', 'read', 'cite'];
  return {
    member: b.asker('member', p.member, [R.teamA], P.main),
    memberViaShared: b.asker('member-via-shared', p.member, [R.teamA, R.teamB], P.main, read, a.shared),
    memberSession: b.asker('member-session', p.member, [R.teamA], P.main, read, `${a.shared}-session`),
    memberRevocableAgent: b.asker('member-agent-2', p.member, [R.teamA], P.main, read, `${a.shared}-2`),
    memberWrongPurpose: b.asker('member-wrong-purpose', p.member, [R.teamA, R.restrictedCase], P.restricted, read),
    peer: b.asker('peer', p.peer, [R.teamB], P.main),
    manager: b.asker('manager', p.manager, [R.teamA, R.restrictedCase], P.main),
    contractor: b.asker('contractor', p.contractor, [R.workspace, R.teamA], P.main, ['search', 'read', 'cite', 'write'], a.contractorBot),
    delegator: b.asker('delegator', p.delegator, [R.teamA], P.main),
    delegatorSecondary: b.asker('delegator-secondary', p.delegator, [R.teamA], P.secondary),
    delegate: b.asker('delegate', p.delegator, [R.teamA], P.secondary, ['search', 'read'], a.delegate),
    delegateMainPurpose: b.asker('delegate-main', p.delegator, [R.teamA], P.main, ['search', 'read'], a.delegate),
    delegateWriter: b.asker('delegate-writer', p.delegator, [R.teamA], P.secondary, ['search', 'read', 'write'], a.delegate),
    privacy: b.asker('privacy', p.privacy, [R.teamA], P.main),
    caseHolder: b.asker('case', p.caseHolder, [R.restrictedCase], P.restricted),
    sameProjectHolder: b.asker('same-project', p.sameProjectHolder, [R.sameProject, R.sameCase], P.main),
    sameCaseHolder: b.asker('same-case', p.sameCaseHolder, [R.sameCase, R.sameProject], P.main),
    reviewer: b.asker('reviewer', p.reviewer, [R.teamA], P.main, ['search', 'read', 'review', 'promote']),
    helper: b.asker('helper', p.helperOwner, [R.teamA], P.main, ['search', 'read'], a.helper),
    helperOwner: b.asker('helper-owner', p.helperOwner, [R.teamA], P.main),
  };
}
