import type { Domain } from '../model.ts';
import { education } from './education.ts';
import { household } from './household.ts';
import { medical } from './medical.ts';
import { office } from './office.ts';
import type { DomainVocab } from './vocab.ts';

export const VOCABS: Record<Domain, DomainVocab> = { medical, office, education, household };
export type { DomainVocab, Slot } from './vocab.ts';
