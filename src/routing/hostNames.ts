import { domainToASCII } from 'node:url';

// How a `targets` risk rule reads a host name. DNS names ignore case, and `db.prod.example.com.`
// (fully qualified, with its root dot) is the same host as `db.prod.example.com`. Both the host
// and the rule's patterns are compared in lower case with one trailing dot taken off.
//
// The host is also read as a URL parser reads it (WHATWG, as fetch does): an internationalized
// name becomes its ASCII form (`bücher.example` is `xn--bcher-kva.example`, as are its full-width
// dots), and an IPv4 address its dotted form (`0x7f.1` is `127.0.0.1`). A pattern is not read
// that way, since glob characters are not host characters (`10.0.0.?` would read as `10.0.0.0`):
// only its labels with non-ASCII letters are turned into their ASCII form.

function withoutTrailingDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** The spellings of a host a pattern is matched on: as written, and as a URL parser reads it. */
export function hostForms(host: string): string[] {
  const written = withoutTrailingDot(host.toLowerCase());
  const parsed = withoutTrailingDot(domainToASCII(host));
  return parsed === '' || parsed === written ? [written] : [written, parsed];
}

/** A `targets` pattern, compared as hostForms() are. */
export function hostPattern(pattern: string): string {
  const labels = pattern.split('.').map((label) =>
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range itself
    /[^\x00-\x7f]/.test(label) ? domainToASCII(label) || label.toLowerCase() : label.toLowerCase(),
  );
  return withoutTrailingDot(labels.join('.'));
}
