import type { ApprovalRecord } from '../domain/record.js';
import { hiddenMarker } from '../util/hiddenCharacters.js';
import { clipProse } from './prose.js';
import { slackAge } from './slackDate.js';
import { subjectSummary } from './subjectSummary.js';

// One pending approval in a list (/countersign pending, App Home): tool, subject and age on one
// line. Host text is escaped, made inert (clipProse) and cut; the permalink comes from Slack (chat.getPermalink).

/** An approval waiting for a user, with the link to its card when Slack gave one. */
export interface WaitingApproval {
  record: Pick<ApprovalRecord, 'approvalId' | 'tool' | 'subject' | 'title' | 'openedAt' | 'slack'>;
  permalink?: string;
}

const MAX_TOOL = 60;
const MAX_SUBJECT = 90;

/**
 * The subject on one line, escaped, cut and inert: a command's newlines or `*` must not format the
 * list. A line break shows as its marker, as in inline code on the card: two commands on two lines
 * must not read as one. Only runs of spaces and tabs are squeezed; hidden characters keep their
 * markers (clip() draws them), where squeezing or trimming all whitespace made them spaces.
 */
export function oneLineSubject(raw: string | undefined): string | undefined {
  const flat = raw
    ?.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '')
    .replace(/[ \t]*\n[ \t]*/g, hiddenMarker('\n'))
    .replace(/[ \t]+/g, ' ');
  return flat ? clipProse(flat, MAX_SUBJECT) : undefined;
}

/** A URL Slack handed us, safe inside `<url|label>`: it has no `|` or `>` to end the link early. */
export function safeLink(url: string | undefined): string | undefined {
  return url && /^https?:\/\/[^\s|<>]+$/.test(url) ? url : undefined;
}

/** "*bash* — `npm test` … — 3 minutes ago", the tool linked to its card when there is a link. */
export function waitingLine(item: WaitingApproval, now: Date): string {
  const { record } = item;
  const tool = clipProse(record.tool.replace(/\s+/g, ' '), MAX_TOOL);
  const link = safeLink(item.permalink);
  const parts = [link ? `*<${link}|${tool}>*` : `*${tool}*`];
  const subject = oneLineSubject(subjectSummary(record));
  if (subject) parts.push(subject);
  const age = slackAge(record.openedAt, now);
  if (age) parts.push(`asked ${age}`);
  return parts.join(' — ');
}
