import { inlineCode } from './escape.js';

/** At most this much of a host id is shown (ids are at most 64 characters: configuration.md). */
const HOST_ID_CHARS = 80;

/**
 * The one line a host's channel gets when the host reaches its cap of open approvals
 * (COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST): what is held back, that nothing was decided for it,
 * and when it comes. The host id is escaped like any text a card shows.
 */
export function renderHostCapLine(hostId: string, max: number, resumeBelow: number): string {
  const count = (n: number) => n.toLocaleString('en-US');
  return (
    `:warning: Host ${inlineCode(hostId, HOST_ID_CHARS)} has ${count(max)} approvals open, as many as Countersign lets one host have ` +
    '(`COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST`). Its new requests get no card for now: they stay pending at the host, ' +
    `undecided, and get their cards once fewer than ${count(resumeBelow)} of its approvals are open. ` +
    'A host asking this much may be looping: look at what its agent is doing.'
  );
}
