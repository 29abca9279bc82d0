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
});
export type RecentDecision = z.infer<typeof RecentDecision>;
