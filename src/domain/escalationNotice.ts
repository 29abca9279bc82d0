import type { ApprovalRecord } from './record.js';

// What escalation steps tell people, as data: relay/escalation hands it over, and the Slack side
// words it with cards/renderEscalation.ts.

/** A reminder's or a mention's reply in the card's thread. */
export type EscalationReply =
  | { kind: 'remind'; waitedMs: number }
  | {
      kind: 'mention';
      waitedMs: number;
      /** The people on call, mentioned one by one… */
      users: readonly string[];
      /** …or, when set, their user group instead. */
      usergroup?: string;
    };

/** The DM to whoever is on call: the approval, how long it has waited, and its card's link. */
export interface EscalationDm {
  record: ApprovalRecord;
  waitedMs: number;
  permalink?: string;
  /** The DM goes to a delegate in place of this person, who is away: their name (never a mention). */
  inPlaceOf?: string;
}
