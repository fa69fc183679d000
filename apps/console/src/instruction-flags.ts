/**
 * Flags on a quarantined write that reads like an instruction to the agent rather than a fact
 * about the subject (docs/console.md, "Instruction flags"). Heuristic and English-only: a flag
 * asks the reviewer to look twice, it never blocks, and no flag is no promise. Every rule says
 * what it looks for, so the reviewer can see why it fired. Pure: runs on the content the review
 * page already shows, in the reviewer's browser; nothing is sent anywhere.
 */

export interface InstructionRule {
  /** Stable name, shown on the flag. */
  id: string;
  /** What the rule looks for, shown on hover and read as the flag's description. */
  explanation: string;
  patterns: readonly RegExp[];
}

export interface InstructionFlag {
  rule: string;
  explanation: string;
  /** What matched, as the reviewer sees it (invisible characters named by code point). */
  evidence: string;
}

// Within one sentence: a clause, not the whole content.
const GAP = '[^.!?\\n]{0,40}';
const re = (source: string, flags = 'i') => new RegExp(source, flags);

const INVISIBLE = /[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|[\u{E0000}-\u{E007F}]/u;

export const INSTRUCTION_RULES: readonly InstructionRule[] = [
  {
    id: 'override-instructions',
    explanation: 'Tells the assistant to ignore, forget or override its previous instructions or rules.',
    patterns: [
      re(`\\b(ignore|disregard|forget|override|bypass|skip)\\b${GAP}\\b(previous|prior|earlier|above|preceding|all|any|your|system|original)\\b${GAP}\\b(instructions?|rules|prompts?|guidelines|directions|directives|polic(y|ies)|guardrails)\\b`),
      re('\\b(new|updated|real) instructions?\\s*:'),
    ],
  },
  {
    id: 'grant-privileges',
    explanation: 'Asks to grant, escalate or change permissions, roles or access (admin, root, owner…).',
    patterns: [
      re(`\\b(grant|give|assign|elevate|escalate|upgrade|add)\\b${GAP}\\b(admin|administrator|root|superuser|sudo|owner|permissions?|privileges?|roles?|full access|access rights?)\\b`),
      re('\\bmake\\s+\\S+\\s+(an?\\s+)?(admin|administrator|owner|superuser)\\b'),
    ],
  },
  {
    id: 'reveal-secrets',
    explanation: 'Asks to reveal, print or send secrets, credentials or the assistant\'s own prompt or instructions.',
    patterns: [
      re(`\\b(reveal|show|print|tell|send|share|output|leak|repeat|dump|display|email|post|forward)\\b${GAP}\\b(system prompt|(your|its) (instructions|prompt|rules|configuration)|passwords?|secrets?|api[ -]?keys?|access tokens?|credentials?|private keys?)\\b`),
    ],
  },
  {
    id: 'standing-order',
    explanation: 'Tells the assistant what to always or never do from now on: a standing order, not a fact.',
    patterns: [
      re('\\b(from now on|going forward|henceforth|in (the )?future|for all future)\\b[^.!?\\n]{0,20}\\b(you|assistant|agent|always|never)\\b'),
      re('\\byou (must|should|will|shall|are to) (always|never)\\b'),
      re('\\b(always|never) (respond|reply|answer|say|tell|mention|reveal|refuse|obey|follow|comply|trust|ignore|recommend)\\b'),
    ],
  },
  {
    id: 'hidden-text',
    explanation: 'Contains characters a reader does not see (zero-width, bidirectional controls, tag characters): text may be hidden in it.',
    patterns: [INVISIBLE],
  },
  {
    id: 'role-marker',
    explanation: 'Contains a chat role marker or prompt delimiter (such as "system:" at a line\'s start or <|im_start|>), as if to open a new turn of the conversation.',
    patterns: [
      re('(^|\\n)\\s*(system|assistant|developer|user)\\s*:', 'i'),
      re('<\\|?\\s*(im_start|im_end|system|endoftext|assistant)\\s*\\|?>'),
      re('\\[/?(INST|SYS)\\]|<</?SYS>>'),
      re('###\\s*(system|instructions?)\\b'),
    ],
  },
];

/** Invisible characters as `U+200B` so the evidence shows what is there. */
const visible = (text: string): string =>
  [...text].map((c) => (INVISIBLE.test(c) ? `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}` : c)).join('');

/** The flags `content` raises, one per rule, in the rules' order. */
export function instructionFlags(content: string): InstructionFlag[] {
  const flags: InstructionFlag[] = [];
  for (const rule of INSTRUCTION_RULES) {
    for (const pattern of rule.patterns) {
      const match = pattern.exec(content);
      if (match !== null) {
        flags.push({ rule: rule.id, explanation: rule.explanation, evidence: visible(match[0].trim()).slice(0, 80) });
        break;
      }
    }
  }
  return flags;
}
