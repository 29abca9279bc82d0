import { networkAddress } from '../domain/networkAddress.js';
import type { ApprovalRecord } from '../domain/record.js';

/** The subject in a few words, for the notification text and the reject modal: "npm test && git push". Raw, not escaped. */
export function subjectSummary(record: Pick<ApprovalRecord, 'subject' | 'title'>): string | undefined {
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
    default:
      return record.title;
  }
}

const SUMMARISED = new Set(['shell', 'fileAccess', 'network', 'process', 'unixSocket', 'tool']);

/**
 * Whether subjectSummary() reads the subject itself: for any other kind it falls back to the title,
 * which the agent chose and which need not say what the subject does.
 */
export function summarisesSubject(record: Pick<ApprovalRecord, 'subject'>): boolean {
  return SUMMARISED.has(record.subject.kind);
}
