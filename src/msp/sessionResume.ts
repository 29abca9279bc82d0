// session/resume from the last view cursor (sessionFollower.ts), so that the host serves only
// what came after it; afresh when the host no longer serves from that cursor.

import type { Logger } from 'pino';
import { z } from 'zod';
import { MspError } from './errors.js';
import type { Requester } from './sessionListing.js';

const ResumeResult = z.looseObject({ viewCursor: z.string().optional() });
/** A cursor the host no longer serves from: resume without one. */
const CURSOR_ERRORS: ReadonlySet<string> = new Set(['notFound', 'viewTruncated', 'boundaryPruned']);

/** Resumes `sessionId` and returns the view cursor to resume from next time, if the host gave one. */
export async function resumeSession(
  request: Requester,
  newCommandId: () => string,
  logger: Logger,
  sessionId: string,
  viewCursor: string | undefined,
): Promise<string | undefined> {
  const params = { commandId: newCommandId(), sessionId, excludeItems: true };
  let raw: unknown;
  try {
    raw = await request('session/resume', viewCursor ? { ...params, cursor: viewCursor } : params);
  } catch (error) {
    if (!viewCursor || !(error instanceof MspError) || !CURSOR_ERRORS.has(error.kind)) throw error;
    logger.info({ sessionId, kind: error.kind }, 'resuming from the last cursor refused; resuming afresh');
    raw = await request('session/resume', { ...params, commandId: newCommandId() });
  }
  const next = ResumeResult.safeParse(raw);
  return next.success && next.data.viewCursor ? next.data.viewCursor : undefined;
}
