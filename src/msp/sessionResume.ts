// session/resume from the last view cursor (sessionFollower.ts), so that the host serves only
// what came after it; afresh when the host no longer serves from that cursor.

import type { Logger } from 'pino';
import { z } from 'zod';
import { MspError } from './errors.js';
import { isKeepableCursor, MAX_VIEW_CURSOR_CHARS } from './protocol.js';
import type { Requester } from './sessionListing.js';

const ResumeResult = z.looseObject({ viewCursor: z.string().optional() });
/** A cursor the host no longer serves from: resume without one. */
const CURSOR_ERRORS: ReadonlySet<string> = new Set(['notFound', 'viewTruncated', 'boundaryPruned']);

/**
 * Resumes `sessionId` and returns the view cursor to resume from next time, if the host gave one
 * small enough to keep.
 */
export async function resumeSession(
  request: Requester,
  newCommandId: () => string,
  logger: Logger,
  sessionId: string,
  viewCursor: string | undefined,
): Promise<string | undefined> {
  // Afresh, the bot needs none of the session's items (the metadata-only load of the vendor's
  // userinput-*-round-trip transcripts). From a cursor the host serves only the suffix, with no
  // history to exclude (msp-approvals.md §3), so the request is the one of the vendor's
  // cursor-* transcripts: sessionId and cursor.
  const fresh = () => ({ commandId: newCommandId(), sessionId, excludeItems: true });
  let raw: unknown;
  try {
    raw = await request(
      'session/resume',
      viewCursor ? { commandId: newCommandId(), sessionId, cursor: viewCursor } : fresh(),
    );
  } catch (error) {
    if (!viewCursor || !(error instanceof MspError) || !CURSOR_ERRORS.has(error.kind)) throw error;
    logger.info({ sessionId, kind: error.kind }, 'resuming from the last cursor refused; resuming afresh');
    raw = await request('session/resume', fresh());
  }
  const next = ResumeResult.safeParse(raw);
  const nextCursor = next.success && next.data.viewCursor ? next.data.viewCursor : undefined;
  if (nextCursor === undefined || isKeepableCursor(nextCursor)) return nextCursor;
  logger.warn(
    { sessionId, cursorChars: nextCursor.length, maxChars: MAX_VIEW_CURSOR_CHARS },
    'the host gave a view cursor too long to keep; the next resume is afresh',
  );
  return undefined;
}
