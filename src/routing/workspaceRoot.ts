import { readAbsolutePath } from './pathSpelling.js';

// What directory a route reads in a workspace root. The host sends the root as the agent spelled
// it (a shell tool's working directory is the model's word), and one directory has many
// spellings: `/srv//prod`, `/srv/x/../prod`, `/proc/self/root/srv/prod`. A route for
// `/srv/prod/**` must catch them all, or the agent dodges its approvers by spelling.
//
// Lexical only, as a route's author reads a path: `..` is resolved by hand, so after a symbolic
// link it may name another directory than the kernel's, and a link (`/home/me/prod` to
// `/srv/prod`) is its own spelling. docs/routing.md says a route is no boundary against links.

/** What names no directory by its spelling, even where pathSpelling.ts reads a name: `/proc/cpuinfo`. */
const MAGIC = /^\/(?:proc|dev\/fd)(?:\/|$)/;

/**
 * The directory `root` names, lexically normalized (`//`, `.` and `..` resolved, no trailing `/`
 * but for `/`, a leading `/proc/self/root` taken off), or undefined when its spelling names none:
 * relative (`~` too), through `/proc` or `/dev/fd` otherwise, or holding a NUL.
 */
export function directoryNamedBy(root: string): string | undefined {
  if (root.includes('\0') || !root.startsWith('/')) return undefined;
  const read = readAbsolutePath(root);
  return read.kind === 'named' && !MAGIC.test(read.path) ? read.path : undefined;
}
