import { z } from 'zod';

/** What App Home shows of one approval a user decided; kept apart from the record, which expires. */
export const RecentDecision = z.object({
  approvalId: z.string(),
  tool: z.string(),
  /** The subject in a few words, as the host sent it (escaped when rendered). */
  summary: z.string().optional(),
  decision: z.string(),
  decidedAt: z.string(),
  channel: z.string(),
  ts: z.string().optional(),
  /**
   * The route that placed the card ('' for none): the entry is shown while the user may still
   * decide there. Entries noted before it was kept have none, and are shown to members only.
   */
  route: z.string().optional(),
});
export type RecentDecision = z.infer<typeof RecentDecision>;
