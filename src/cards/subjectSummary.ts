import { networkAddress } from '../domain/networkAddress.js';
import type { ApprovalRecord } from '../domain/record.js';

/** A takeover's subject in the bot's words: it holds no text of the agent's to show. */
export const TAKEOVER = 'computer use: the agent wants to take over the screen';

/** The subject in a few words, for the notification text and the reject modal: "npm test && git push". Raw, not escaped. */
export function subjectSummary(record: Pick<ApprovalRecord, 'subject'>): string | undefined {
  const s = record.subject;
  switch (s.kind) {
    case 'shell':
      return s.command;
    case 'fileAccess':
      return s.path === undefined ? undefined : `${s.access ?? 'access'} ${s.path}`;
    case 'network':
      return networkAddress(s);
    case 'process':
      return s.target;
    case 'unixSocket':
      return s.path ?? s.target;
    case 'tool':
      return s.toolName;
    case 'computerUseTakeover':
      return TAKEOVER;
    default:
      // Never the title: the agent chose it, and it need not say what the subject does (a subject
      // of a new kind running `rm -rf /`, titled `npm test`). Read where it stands (a list, a
      // confirm or reason modal, the notification), it would pass for the request.
      return `a request of kind ${s.kind}, not a kind this bot knows`;
  }
}

const SUMMARISED = new Set(['shell', 'fileAccess', 'network', 'process', 'unixSocket', 'tool']);

/**
 * Whether subjectSummary() reads the subject itself: for any other kind it names the kind only
 * (never the agent's title), and the card shows the subject as sent.
 */
export function summarisesSubject(record: Pick<ApprovalRecord, 'subject'>): boolean {
  return SUMMARISED.has(record.subject.kind);
}
