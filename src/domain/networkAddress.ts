import type { ApprovalSubject } from '../msp/protocol.js';

/** protocol://host:port, as hosts themselves render a network subject. */
export function networkAddress(subject: ApprovalSubject): string | undefined {
  if (subject.host === undefined) return undefined;
  const scheme = subject.protocol ? `${subject.protocol}://` : '';
  const port = subject.port !== undefined ? `:${subject.port}` : '';
  return `${scheme}${subject.host}${port}`;
}
