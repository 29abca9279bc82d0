import type { Refused } from '../domain/authorization.js';

// Refused attempts, counted for /metrics by reason. A reason becomes a label value, so the set is
// closed: the reasons authorization gives (the compiler asks for a new one to be added here), and
// `other` for any a caller makes up. Never a user: one series per user would grow without bound.

const KNOWN: Record<Refused['why'], true> = {
  notApprover: true,
  selfApproval: true,
  routeGone: true,
  notRiskApprover: true,
  external: true,
  guest: true,
  deactivated: true,
  notChannelMember: true,
  unverified: true,
};

export type RefusalReasonLabel = Refused['why'] | 'other';

export const REFUSAL_REASON_LABELS: readonly RefusalReasonLabel[] = [
  ...(Object.keys(KNOWN) as Array<Refused['why']>),
  'other',
];

function labelOf(reason: string): RefusalReasonLabel {
  return Object.hasOwn(KNOWN, reason) ? (reason as Refused['why']) : 'other';
}

function zeroes(): Record<RefusalReasonLabel, number> {
  return Object.fromEntries(REFUSAL_REASON_LABELS.map((label) => [label, 0])) as Record<
    RefusalReasonLabel,
    number
  >;
}

export class RefusalCounts {
  /** Every refused attempt that reached the audit trail. */
  readonly total = zeroes();
  /** Those past their user's limit per minute: counted, not written to the refusal stream. */
  readonly overLimit = zeroes();

  count(reason: string): void {
    this.total[labelOf(reason)] += 1;
  }

  countOverLimit(reason: string): void {
    this.overLimit[labelOf(reason)] += 1;
  }
}
