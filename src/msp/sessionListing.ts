// Reading what a host has (sessionFollower.ts): every session, paged with session/list, and the
// approvals pending in one session (approval/listPending).

import type { Logger } from 'pino';
import { z } from 'zod';
import type { WarnLog } from '../util/logBudget.js';
import { approvalLogFields, parseApprovalRequest } from './approvalEvents.js';
import { MspError } from './errors.js';
import { type ApprovalRequestParams, ListPendingResult, Session } from './protocol.js';

export type Requester = (method: string, params: unknown) => Promise<unknown>;

const SESSION_LIST_PAGE_LIMIT = 200;
/** A host that keeps returning cursors must not keep us paging forever. */
const SESSION_LIST_MAX_PAGES = 500;

const SessionListPage = z.looseObject({
  sessions: z.array(z.unknown()),
  nextCursor: z.string().nullable().optional(),
});

/** What the host lists as pending in a session: the entries that parse, and the ids of all of them. */
export interface PendingListing {
  approvals: ApprovalRequestParams[];
  ids: string[];
}

/**
 * Reads an approval/listPending result; undefined when it does not parse. `log` takes the
 * warnings about what does not parse: as many as the host lists (JsonRpcConnection.frameWarnings).
 */
export function parsePendingListing(raw: unknown, log: WarnLog): PendingListing | undefined {
  const result = ListPendingResult.safeParse(raw);
  if (!result.success) {
    log.warn({}, 'approval/listPending result does not parse; session not reconciled');
    return undefined;
  }
  const approvals: ApprovalRequestParams[] = [];
  const ids: string[] = [];
  for (const entry of result.data.approvals) {
    const { approvalId } = approvalLogFields(entry);
    if (approvalId !== undefined) ids.push(approvalId);
    const params = parseApprovalRequest(entry, 'approval/listPending', log);
    if (params !== undefined) approvals.push(params);
  }
  return { approvals, ids };
}

/**
 * Every session the host lists; on a failure, those listed so far. `entryWarnings` takes a line
 * per entry that does not parse: as many as the host lists (JsonRpcConnection.frameWarnings).
 */
export async function listAllSessions(
  request: Requester,
  logger: Logger,
  entryWarnings: WarnLog = logger,
): Promise<Session[]> {
  const sessions: Session[] = [];
  const seenCursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < SESSION_LIST_MAX_PAGES; page++) {
    let raw: unknown;
    try {
      raw = await request(
        'session/list',
        cursor === undefined
          ? { limit: SESSION_LIST_PAGE_LIMIT }
          : { limit: SESSION_LIST_PAGE_LIMIT, cursor },
      );
    } catch (error) {
      if (!(error instanceof MspError)) throw error;
      logger.warn(
        { kind: error.kind, code: error.code },
        'session/list failed; following known sessions only',
      );
      return sessions;
    }
    const parsed = SessionListPage.safeParse(raw);
    if (!parsed.success) {
      logger.warn('session/list result does not parse; following known sessions only');
      return sessions;
    }
    for (const entry of parsed.data.sessions) {
      const session = Session.safeParse(entry);
      if (session.success) sessions.push(session.data);
      else
        entryWarnings.warn(
          { ...approvalLogFields(entry) },
          'skipping session/list entry that does not parse',
        );
    }
    const next = parsed.data.nextCursor;
    if (next === undefined || next === null || next === '' || seenCursors.has(next)) return sessions;
    seenCursors.add(next);
    cursor = next;
  }
  logger.warn({ pages: SESSION_LIST_MAX_PAGES }, 'session/list paging stopped at the page limit');
  return sessions;
}
