import { inlineCode } from './escape.js';

/** At most this much of a host id is shown (ids are at most 64 characters: configuration.md). */
const HOST_ID_CHARS = 80;
/** At most this much of an approval id (the host may send 256 characters). */
const APPROVAL_ID_CHARS = 80;

/**
 * The one line the asking host's channel gets when the host asked an approval under an id another
 * host's approval already has (records are kept by approvalId alone): that approval gets no record
 * and no card, and stays pending at its host. Both ids are escaped like any text a card shows.
 */
export function renderTakenIdLine(hostId: string, approvalId: string): string {
  return (
    `:warning: Host ${inlineCode(hostId, HOST_ID_CHARS)} asked approval ${inlineCode(approvalId, APPROVAL_ID_CHARS)}, ` +
    "but that id already belongs to another host's approval, so it cannot be shown or decided in Slack: " +
    'decide it at the host.'
  );
}
