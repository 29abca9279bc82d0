import { posix } from 'node:path';

// One file has many spellings, and some of Linux's name no file by their letters: a route or a
// risk rule that read them as spelt would be dodged by spelling. `/proc/self/root/etc/passwd` is
// `/etc/passwd` again; below `/proc/self/cwd` lies whatever directory the process is in; and
// `/dev/fd/3`, `/proc/self/fd/3`, `/dev/stdout` are files already open, any file at all.
// Lexical only: what a symbolic link leads to is for the filesystem (docs/routing.md).

/** A path as a rule sees it: `..`, `.` and doubled slashes resolved, no trailing slash. */
export function normalizedPath(path: string): string {
  const normal = posix.normalize(path);
  return normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal;
}

/** A process's (or one of its threads') directory in /proc. */
const PROCESS = String.raw`^/proc/(?:\d+|self|thread-self)(?:/task/\d+)?`;
/** The process's view of the whole tree: `/proc/self/root/etc` is `/etc`. */
const PROCESS_ROOT = new RegExp(`${PROCESS}/root(?=/|$)`);
/** The process's working directory: what lies below it, only the process knows. */
const PROCESS_CWD = new RegExp(`${PROCESS}/cwd(?:/|$)`);
/** Anything else of a process (`fd/3`, `map_files/…`, `exe`): no file of its own spelling. */
const PROCESS_OTHER = new RegExp(`${PROCESS}(?:/|$)`);
/** Open descriptors: `/dev/fd/3`, `/dev/stdout`. */
const DESCRIPTOR = /^\/dev\/(?:fd(?:\/|$)|std(?:in|out|err)$)/;

/** What an absolute path names, read lexically. */
export type PathReading =
  /** A file or directory of this spelling (`/proc/self/root` taken off). */
  | { kind: 'named'; path: string }
  /** `rest` below a directory nobody but the process knows (`/proc/self/cwd/rest`); '' for that directory. */
  | { kind: 'belowUnknown'; rest: string }
  /** Any file at all: an open descriptor, or a process's own entries. */
  | { kind: 'unknown' };

/** `absolute` (starting with "/") normalized and read for what it names. */
export function readAbsolutePath(absolute: string): PathReading {
  let path = normalizedPath(absolute);
  while (PROCESS_ROOT.test(path)) path = normalizedPath(`/${path.replace(PROCESS_ROOT, '')}`);
  const cwd = PROCESS_CWD.exec(path);
  if (cwd !== null) return { kind: 'belowUnknown', rest: path.slice(cwd[0].length) };
  if (PROCESS_OTHER.test(path) || DESCRIPTOR.test(path)) return { kind: 'unknown' };
  return { kind: 'named', path };
}
