import type { ApprovalRecord } from '../../domain/record.js';
import { FALLBACK_ROUTE_NAME } from '../../routing/router.js';
import { cutAtCodePoint } from '../../util/cutAtCodePoint.js';
import { markHidden } from '../../util/hiddenCharacters.js';
import { shortDuration } from '../../util/shortDuration.js';

// What a PagerDuty page says. A page reaches whoever PagerDuty has on call (a contractor who is a
// Slack guest, say) by SMS, push or phone, and whoever can read the service's incidents, none of
// them checked as a DM's reader is (Authorizer.check): by default it says which approval waits,
// where and for how long, never what it asks. A step with `includeRequest` adds the request.

/** A tool name is an identifier: this much is enough to tell it, and keeps the summary short. */
const MAX_TOOL_CHARS = 80;

/** What PagerDuty shows as plain text: hidden characters marked as on cards, on one line. */
function plain(text: string): string {
  return markHidden(text).replace(/\s+/g, ' ').trim();
}

/** `tool`, cut before it is marked so that a cut never splits a marker. */
function toolName(tool: string): string {
  const cut = cutAtCodePoint(tool, MAX_TOOL_CHARS);
  return plain(cut.length < tool.length ? `${cut}…` : cut);
}

/** The request in a few words: a shell command as it runs, else the host's title or the subject's kind. */
function requestText(record: ApprovalRecord): string {
  const { subject } = record;
  return plain((subject.kind === 'shell' ? subject.command : record.title) ?? subject.kind);
}

/** `Approval waiting on route deploys: bash, 45 min`, and ` — <the request>` when the step says. */
export function pageSummary(record: ApprovalRecord, waitedMs: number, includeRequest: boolean): string {
  const route = plain(record.route ?? FALLBACK_ROUTE_NAME);
  const summary = `Approval waiting on route ${route}: ${toolName(record.tool)}, ${shortDuration(waitedMs)}`;
  return includeRequest ? `${summary} — ${requestText(record)}` : summary;
}

/** The page's custom_details: where the approval is and how long it waited; its session when the step says. */
export function pageDetails(
  record: ApprovalRecord,
  card: string,
  waitedMs: number,
  includeRequest: boolean,
): Record<string, unknown> {
  return {
    approvalId: record.approvalId,
    route: record.route ?? FALLBACK_ROUTE_NAME,
    host: record.hostId,
    card,
    age: shortDuration(waitedMs),
    ageSeconds: Math.round(waitedMs / 1000),
    ...(includeRequest
      ? {
          sessionId: record.sessionId,
          ...(record.sessionTitle ? { sessionTitle: plain(record.sessionTitle) } : {}),
        }
      : {}),
  };
}
