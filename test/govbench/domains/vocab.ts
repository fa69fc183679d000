import type { Domain, Resource } from '../model.ts';

/** The text slots every domain fills: `{S}` is the subject's name, `{C}` the record's leak marker. */
export const SLOTS = [
  'team', 'shared', 'private', 'confidential', 'restricted', 'peer', 'workspace', 'sameProject', 'sameCase',
  'caseRecord', 'updateOld', 'updateNew', 'deletable', 'forgetA', 'forgetB', 'expiring', 'quarantined', 'splitA', 'splitB',
] as const;
export type Slot = (typeof SLOTS)[number];

/**
 * What makes a domain a domain: its resources (two teams with confusable names, a contractor
 * or guest workspace, a project and a case with the same name, a restricted case), its people
 * and their relationships, its purposes and its texts. The episode structure is shared.
 */
export interface DomainVocab {
  domain: Domain;
  purposes: { main: string; secondary: string; restricted: string };
  resources: { teamA: Resource; teamB: Resource; workspace: Resource; sameProject: Resource; sameCase: Resource; restrictedCase: Resource };
  /** Principal ids; the comments in each domain say who they are. */
  people: {
    member: string; peer: string; manager: string; contractor: string; delegator: string; privacy: string;
    caseHolder: string; sameProjectHolder: string; sameCaseHolder: string; reviewer: string; helperOwner: string;
  };
  /** Agent ids: a shared assistant serving both teams, a delegate with limited scope, a helper that gets revoked. */
  agents: { shared: string; delegate: string; helper: string; contractorBot: string };
  subjects: readonly string[];
  text: Record<Slot, string>;
  /** Authority pressure put into a query; `{S}` is the subject. */
  pressure: readonly string[];
}
