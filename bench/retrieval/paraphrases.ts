/**
 * The paraphrase set of `pnpm bench:retrieval` (§6.7): facts of the four govbench domains,
 * each asked about in two wordings that share (almost) no content word with it. A fact is
 * "<subject> <relation>", and a query "<relation question> <subject alias>": every subject holds
 * eight facts, so a query must find the right relation, and every relation holds eight
 * subjects, so it must find the right subject too. Deterministic; 4 × 8 × 8 = 256 facts and
 * 512 (fact, query) pairs.
 */

export interface ParaphrasePair {
  /** The id of the fact record the query is about (the only relevant record). */
  factId: string;
  query: string;
}

export interface ParaphraseSet {
  facts: Array<{ id: string; domain: string; subject: string; content: string }>;
  pairs: ParaphrasePair[];
}

/** A subject as the fact names it, and as a query names it. */
type Subject = readonly [fact: string, query: string];
/** A relation: the fact's predicate (with its answer), and two questions that ask for it. */
type Relation = readonly [fact: string, question1: string, question2: string];

interface Domain {
  name: string;
  subjects: readonly Subject[];
  relations: readonly Relation[];
}

const DOMAINS: readonly Domain[] = [
  {
    name: 'office',
    subjects: [
      ['the Oslo office', 'our Norwegian branch'],
      ['the finance team', 'the accounting department'],
      ['the new intern', 'the trainee who just started'],
      ['the CEO', 'the chief executive'],
      ['the London warehouse', 'the British depot'],
      ['the support desk', 'the helpdesk staff'],
      ['the legal counsel', 'our company lawyer'],
      ['the sales manager', 'the head of selling'],
    ],
    relations: [
      ['pays invoices in Norwegian kroner', 'which currency settles the bills of', 'what money do we use to pay suppliers for'],
      ['prefers email over phone calls', 'how would they like to be contacted:', 'best channel to reach'],
      ['works from home every Friday', 'which weekday is remote for', 'when is the day away from the building for'],
      ['needs the quarterly report by the tenth', 'deadline for the three-month summary due from', 'when must the periodic figures be delivered by'],
      ['is allergic to peanuts at catered lunches', 'food restriction to remember when ordering meals for', 'what snack could make ill'],
      ['uses the blue meeting room on Tuesdays', 'where do they hold gatherings midweek:', 'which conference space is booked for'],
      ['signs contracts only after a legal review', 'what approval is required before agreements get executed by', 'can deals be closed immediately by'],
      ['travels to Berlin twice a month', 'how often are German trips made by', 'business journeys abroad of'],
    ],
  },
  {
    name: 'medical',
    subjects: [
      ['the patient in room 12', 'the person staying in ward twelve'],
      ['the night nurse', 'the overnight caregiver'],
      ['the cardiology clinic', 'the heart unit'],
      ['the elderly diabetic man', 'the old gentleman with high blood sugar'],
      ['the pediatric ward', 'the children department'],
      ['the pharmacy', 'the dispensary'],
      ['the surgeon on call', 'the operating doctor on duty'],
      ['the physiotherapy team', 'the rehab therapists'],
    ],
    relations: [
      ['must not receive penicillin', 'which antibiotic is forbidden for', 'drug reaction to watch out for with'],
      ['takes insulin before breakfast', 'when is the morning injection for', 'what medication comes ahead of the first meal for'],
      ['is visited by family on Sundays', 'which day do relatives come to see', 'when do loved ones drop by for'],
      ['requires a wheelchair for transfers', 'mobility aid needed to move', 'how is movement between beds handled for'],
      ['follows a low sodium diet', 'what eating plan limits salt for', 'nutrition rule about seasoning for'],
      ['reports pain at level seven', 'how bad is the discomfort of', 'hurt score given by'],
      ['is scheduled for an MRI on Monday', 'when is the magnetic scan planned for', 'imaging appointment at the start of the week for'],
      ['speaks only Portuguese', 'which language is needed to talk with', 'interpreter required for'],
    ],
  },
  {
    name: 'education',
    subjects: [
      ['the grade seven math class', 'the year-seven arithmetic group'],
      ['the school librarian', 'the person running the book room'],
      ['the robotics club', 'the engineering hobby group for kids'],
      ['the new exchange student', 'the pupil visiting from abroad'],
      ['the music teacher', 'the instructor for singing and instruments'],
      ['the school bus', 'the morning coach for pupils'],
      ['the chemistry lab', 'the science room with beakers'],
      ['the headmaster', 'the principal of the school'],
    ],
    relations: [
      ['has exams every second Thursday', 'how frequently are tests held for', 'testing rhythm of'],
      ['is closed during the winter holidays', 'when is no one available at', 'seasonal shutdown period of'],
      ['needs parental consent forms for trips', 'what permission do guardians give before outings with', 'paperwork required for excursions with'],
      ['meets in room 204 after lunch', 'where is the afternoon gathering place for', 'location of the early afternoon sessions of'],
      ['bans mobile phones in class', 'rule about handsets during lessons of', 'are cell devices allowed with'],
      ['orders new supplies in September', 'which month is restocking for', 'when is the materials purchase made by'],
      ['reports grades online each term', 'how are marks published by', 'where do results appear from'],
      ['runs a fundraiser every spring', 'when is the charity drive of', 'money-raising event organised by'],
    ],
  },
  {
    name: 'household',
    subjects: [
      ['the family dog', 'our pet puppy'],
      ['the youngest daughter', 'the little girl of the house'],
      ['the garden shed', 'the small outbuilding in the yard'],
      ['grandmother', 'the old lady of the family'],
      ['the washing machine', 'the laundry appliance'],
      ['the kitchen', 'the cooking area'],
      ['the family car', 'our automobile'],
      ['the upstairs neighbour', 'the person living on the floor above'],
    ],
    relations: [
      ['is walked at seven every evening', 'what time is the nightly stroll of', 'when does the evening outing happen for'],
      ['cannot eat gluten', 'which grain protein must be avoided by', 'dietary intolerance of'],
      ['keeps the spare key under the blue pot', 'where is the extra house key near', 'hidden entry key location for'],
      ['has a birthday on the third of May', 'which spring date is celebrated for', 'when is the anniversary of birth of'],
      ['is serviced by a plumber from Hansen Ltd', 'which repair firm fixes the pipes of', 'who does water maintenance for'],
      ['is cleaned on Saturday mornings', 'when does the weekly tidy-up happen for', 'scrubbing day for'],
      ['is insured with Nordic Mutual', 'which coverage provider protects', 'policy company for'],
      ['gets loud after midnight', 'noise complaints late at night about', 'who is disruptive in the small hours:'],
    ],
  },
];

/** The set: every (domain, subject, relation) a fact, and each asked twice. */
export function paraphraseSet(): ParaphraseSet {
  const facts: ParaphraseSet['facts'] = [];
  const pairs: ParaphrasePair[] = [];
  for (const domain of DOMAINS) {
    domain.subjects.forEach(([subject, alias], s) => {
      domain.relations.forEach(([predicate, q1, q2], r) => {
        const id = `para-${domain.name}-${s}-${r}`;
        const content = `${subject.charAt(0).toUpperCase()}${subject.slice(1)} ${predicate}.`;
        facts.push({ id, domain: domain.name, subject: `${domain.name}-${s}`, content });
        pairs.push({ factId: id, query: `${q1} ${alias}?` }, { factId: id, query: `${q2} ${alias}?` });
      });
    });
  }
  return { facts, pairs };
}
