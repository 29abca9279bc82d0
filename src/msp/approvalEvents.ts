import type { z } from 'zod';
import { cutWithMark } from '../util/cutAtCodePoint.js';
import type { WarnLog } from '../util/logBudget.js';
import type { HostEvent } from './events.js';
import {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
  MAX_HOST_ID_CHARS,
} from './protocol.js';

// Turns approval frames into HostEvents. Params are parsed leniently (protocol.ts); a frame that
// still does not parse is logged, with the ids we could recover, and skipped. A field the
// approval can be relayed without is dropped instead, with a line of its own. The host chooses
// how many: callers pass their connection's LogBudget (JsonRpcConnection.frameWarnings).

export interface EventOrigin {
  hostId: string;
  incarnation: string;
}

/**
 * An id for a log line about a bad frame: cut (with a mark) past the longest an id may be, so
 * that a frame refused for a megabyte id does not write the megabyte to the log.
 */
function loggedId(id: string): string {
  return cutWithMark(id, MAX_HOST_ID_CHARS);
}

/** approvalId and sessionId of a payload, when present, for log lines about bad frames. */
export function approvalLogFields(params: unknown): { approvalId?: string; sessionId?: string } {
  if (typeof params !== 'object' || params === null) return {};
  const record = params as Record<string, unknown>;
  const fields: { approvalId?: string; sessionId?: string } = {};
  if (typeof record.approvalId === 'string') fields.approvalId = loggedId(record.approvalId);
  if (typeof record.sessionId === 'string') fields.sessionId = loggedId(record.sessionId);
  return fields;
}

function parse<T extends z.ZodType<{ unreadableFields?: readonly string[] | undefined }>>(
  schema: T,
  params: unknown,
  method: string,
  logger: WarnLog,
): z.infer<T> | undefined {
  const result = schema.safeParse(params);
  if (result.success) {
    // A field the approval can do without, in a shape we do not read, was dropped (protocol.ts,
    // REQUEST_DROPPABLE) and the frame kept. Named, not quoted: the value is the agent's text.
    for (const field of result.data.unreadableFields ?? []) {
      logger.warn(
        { ...approvalLogFields(params), method, field },
        'dropping a field of an approval frame that does not parse',
      );
    }
    return result.data;
  }
  logger.warn(
    {
      ...approvalLogFields(params),
      method,
      issues: result.error.issues.slice(0, 5).map((issue) => `${issue.path.join('.')}: ${issue.message}`),
    },
    'skipping approval frame that does not parse',
  );
  return undefined;
}

export function parseApprovalRequest(
  params: unknown,
  method: string,
  logger: WarnLog,
): ApprovalRequestParams | undefined {
  return parse(ApprovalRequestParams, params, method, logger);
}

/** The methods this module maps; anything else is not an approval notification. */
export const APPROVAL_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'approval/requested',
  'approval/reviewing',
  'approval/updated',
  'approval/resolved',
]);

/** Maps one approval notification to its event, or undefined when it does not parse. */
export function approvalEventFromNotification(
  method: string,
  params: unknown,
  origin: EventOrigin,
  logger: WarnLog,
): HostEvent | undefined {
  switch (method) {
    case 'approval/requested': {
      const parsed = parseApprovalRequest(params, method, logger);
      return parsed && { type: 'approvalOpened', ...origin, via: 'requested', params: parsed };
    }
    case 'approval/reviewing': {
      const parsed = parseApprovalRequest(params, method, logger);
      return parsed && { type: 'approvalReviewing', ...origin, params: parsed };
    }
    case 'approval/updated': {
      const parsed = parse(ApprovalUpdatedParams, params, method, logger);
      return parsed && { type: 'approvalUpdated', ...origin, params: parsed };
    }
    case 'approval/resolved': {
      const parsed = parse(ApprovalResolvedParams, params, method, logger);
      return parsed && { type: 'approvalResolved', ...origin, params: parsed };
    }
    default:
      return undefined;
  }
}
