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
//
// An IPv6 address (with or without its brackets) is read by the URL parser too, into its short
// form without brackets (`2001:DB8:0::1` is `2001:db8::1`), and one that carries an IPv4 address
// also as that address, which is where it leads: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
// `::a.b.c.d`, and NAT64's `64:ff9b::a.b.c.d`. So `[::ffff:a9fe:a9fe]` is `169.254.169.254`.

function withoutTrailingDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** An IPv6 address as a URL parser writes it, without brackets; undefined for any other host. */
function ipv6Form(host: string): string | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (!bare.includes(':')) return undefined;
  try {
    return new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** The eight 16-bit groups of an address as ipv6Form() writes it (hexadecimal, one `::` at most). */
function groupsOf(address: string): number[] {
  const [head = '', tail = ''] = address.split('::');
  const groups = (part: string) =>
    part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16));
  const front = groups(head);
  const back = address.includes('::') ? groups(tail) : [];
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The IPv4 address an IPv6 one carries in its last 32 bits, for the prefixes that route there. */
function embeddedIpv4(address: string): string | undefined {
  const groups = groupsOf(address);
  const zeroFrom = (start: number, end: number) => groups.slice(start, end).every((group) => group === 0);
  const mapped = zeroFrom(0, 5) && groups[5] === 0xffff;
  const compatible = zeroFrom(0, 6);
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && zeroFrom(2, 6);
  if (!mapped && !compatible && !nat64) return undefined;
  const [high = 0, low = 0] = groups.slice(6);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/**
 * The spellings of a host a pattern is matched on: as written, and as a URL parser reads it (an
 * IPv6 address also as the IPv4 one it carries).
 */
export function hostForms(host: string): string[] {
  const written = withoutTrailingDot(host.toLowerCase());
  const ipv6 = ipv6Form(host);
  const parsed = ipv6 === undefined ? [withoutTrailingDot(domainToASCII(host))] : [ipv6, embeddedIpv4(ipv6)];
  const forms = [written];
  for (const form of parsed) if (form && !forms.includes(form)) forms.push(form);
  return forms;
}

/** A `targets` pattern, compared as hostForms() are. */
export function hostPattern(pattern: string): string {
  const labels = pattern.split('.').map((label) =>
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range itself
    /[^\x00-\x7f]/.test(label) ? domainToASCII(label) || label.toLowerCase() : label.toLowerCase(),
  );
  return withoutTrailingDot(labels.join('.'));
}
