import { domainToASCII } from 'node:url';
import type { ApprovalSubject } from '../msp/protocol.js';

/** protocol://host:port, as hosts themselves render a network subject. */
export function networkAddress(subject: ApprovalSubject): string | undefined {
  if (subject.host === undefined) return undefined;
  const scheme = subject.protocol ? `${subject.protocol}://` : '';
  const port = subject.port !== undefined ? `:${subject.port}` : '';
  return `${scheme}${subject.host}${port}`;
}

/**
 * The host as DNS looks it up (`xn--…`), when it is sent with characters beyond ASCII and reads
 * otherwise: `gіthub.com` with a Cyrillic і is not github.com, and only this form shows it. Risk
 * patterns match this form too (routing/hostNames.ts); the computer-use page shows its own.
 */
export function asciiHost(subject: ApprovalSubject): string | undefined {
  const host = subject.host;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range itself
  if (host === undefined || !/[^\x00-\x7f]/.test(host)) return undefined;
  const ascii = domainToASCII(host);
  return ascii !== '' && ascii !== host ? ascii : undefined;
}
