import { HTDBM, HTPASSWD, passwordSecret, takesPasswordArgument } from './htpasswdSecrets.js';
import {
  anyCase,
  atNameStart,
  atStart,
  atWordStart,
  BLANKS,
  flagGap,
  JSON_ITEM_GAP,
  quotedOrBare,
} from './ruleParts.js';

// Secrets given on a command line as a flag's value: `--password hunter2`, `mysql -phunter2`,
// `curl -u admin:hunter2`, `aws configure set aws_secret_access_key X`. The same vocabulary
// masks a command written as text (maskSecrets.ts) and an argv, whose words come apart
// (argvSecrets.ts).
//
// A long flag is secret when its last word is (`--client-secret`, `--auth-token`), so a flag
// naming where a secret lives (`--password-file`, `--token-env`) keeps its value: a path or a
// name. A boolean flag (`--no-password`, `--ask-password`, `--with-token`) takes no value.
// Short flags mean a password only for some programs (`-p` is a port for ssh and `docker run`, a
// profile elsewhere), so they are masked only after one of those programs' names, in the same
// command, and for some only after a subcommand too: `docker login -p` is a password.

const SECRET_FLAG_WORDS = [
  'passw(?:or)?d',
  'passphrase',
  'secret',
  'token',
  'api-?key',
  'access-?key',
  'secret-?key',
];

/** Names whose value follows after a blank (`aws configure set aws_secret_access_key X`). */
const SECRET_NAMES = ['aws_secret_access_key', 'aws_session_token'];

/** After `--`: not a boolean flag, then words, the last one secret. */
const LONG_SECRET_FLAG_TAIL = `(?!(?:no|ask|prompt|with|show|print)-)(?:[A-Za-z0-9]{1,40}-){0,6}(?:${SECRET_FLAG_WORDS.map(anyCase).join('|')})`;
const SECRET_NAME = `(?:${SECRET_NAMES.map(anyCase).join('|')})`;

/** A whole word that is a long flag or a name whose value, the next word, is a secret. */
export const SECRET_FLAG_WORD = new RegExp(`^(?:--${LONG_SECRET_FLAG_TAIL}|${SECRET_NAME})$`);

/**
 * `--password hunter2`, `"--token", "x"` in a JSON argv, `aws_secret_access_key X`: a rule of
 * secretRules.ts. With `=` its key-value rule masks the value.
 */
export const SECRET_FLAG_RULE = {
  label: 'secret-value',
  source: `(?:${atNameStart('--')}${LONG_SECRET_FLAG_TAIL}|${atWordStart(SECRET_NAME)})${flagGap('Flag')}`,
};

/** What part of a program flag's value is secret. */
type SecretPart = 'whole' | 'afterColon' | 'cookie';

/** Flags that carry a secret for some programs only. */
export interface ProgramFlag {
  /** Program names, as the file is called (`/usr/bin/curl` is curl). */
  programs: readonly string[];
  /** `-x` (its value glued, or the next word when `nextWord`) or `--long` (`=value` or the next word). */
  flags: readonly string[];
  /** Whether a short flag's value may be the next word; `mysql -p` alone prompts instead. */
  nextWord: boolean;
  /** `afterColon`: `user:password`, the user kept; `cookie`: only a value holding `=`. */
  secret: SecretPart;
  /**
   * A word that must come after the program's name, before the flag, for the flag to be secret:
   * `docker login -p` is a password, `docker run -p` a port.
   */
  subcommand?: string;
}

const MYSQL_PROGRAMS = [
  'mysql',
  'mysqldump',
  'mysqladmin',
  'mysqlimport',
  'mysqlshow',
  'mysqlcheck',
  'mysqlpump',
  'mysqlslap',
  'mysqlbinlog',
  'mariadb',
  'mariadb-dump',
  'mariadb-admin',
  'mariadb-import',
  'mariadb-show',
  'mariadb-check',
];

/**
 * Programs whose `login` takes the password as `-p` (`helm registry login`, `az login -p` for a
 * service principal's secret). Their `--password` is masked for any program.
 */
const LOGIN_PROGRAMS = ['docker', 'podman', 'nerdctl', 'buildah', 'skopeo', 'oras', 'helm', 'az', 'oc', 'cf'];

export const PROGRAM_FLAGS: readonly ProgramFlag[] = [
  { programs: MYSQL_PROGRAMS, flags: ['-p'], nextWord: false, secret: 'whole' },
  { programs: ['curl'], flags: ['-u', '-U', '--user', '--proxy-user'], nextWord: true, secret: 'afterColon' },
  { programs: ['curl'], flags: ['-b', '--cookie'], nextWord: true, secret: 'cookie' },
  { programs: ['redis-cli'], flags: ['-a', '--pass'], nextWord: true, secret: 'whole' },
  { programs: ['sshpass'], flags: ['-p'], nextWord: true, secret: 'whole' },
  { programs: LOGIN_PROGRAMS, flags: ['-p'], nextWord: true, secret: 'whole', subcommand: 'login' },
];

export function isLongFlag(flag: string): boolean {
  return flag.startsWith('--');
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
}

/** Longest first, so that `mariadb-dump` is tried before `mariadb`. */
function alternatives(words: Iterable<string>): string {
  return [...new Set(words)]
    .sort((a, b) => b.length - a.length)
    .map(escaped)
    .join('|');
}

/** The value of a program flag, the part to mask in a group named `secret…`. */
function programValue(secret: SecretPart): string {
  switch (secret) {
    case 'whole':
      return quotedOrBare('');
    case 'cookie':
      return `(?=\\\\?["']?[^\\s"'\\\\=]{1,256}=)${quotedOrBare('')}`;
    case 'afterColon':
      return quotedOrBare('', `[^\\s:"'\\\\;&|()<>]{0,256}:`);
  }
}

/** Between a flag and its value when that is the next word: blanks, or the next JSON array item. */
const NEXT_WORD = `(?:${BLANKS}|${JSON_ITEM_GAP})`;

/** A program flag's value, matched right where the flag ends (sticky). */
function valueAfter(entry: ProgramFlag, flag: string): RegExp {
  let gap = '';
  if (isLongFlag(flag)) gap = `(?:=|${NEXT_WORD})`;
  else if (entry.nextWord) gap = `${NEXT_WORD}?`;
  return new RegExp(`${gap}${programValue(entry.secret)}`, 'yd');
}

const ALL_FLAGS = PROGRAM_FLAGS.flatMap((entry) => entry.flags);
const PROGRAM_NAMES = alternatives([...PROGRAM_FLAGS.flatMap((entry) => entry.programs), HTPASSWD, HTDBM]);
const LONG_FLAGS = alternatives(ALL_FLAGS.filter(isLongFlag));
const SHORT_FLAGS = alternatives(ALL_FLAGS.filter((flag) => !isLongFlag(flag)));

const SUBCOMMANDS = alternatives(PROGRAM_FLAGS.flatMap((entry) => entry.subcommand ?? []));

/** Whether a text names any program of PROGRAM_FLAGS, htpasswd or htdbm: only then is it scanned. */
const ANY_PROGRAM = new RegExp(`(?:${PROGRAM_NAMES})(?![A-Za-z0-9_-])`);

/**
 * What ends a command (a line, `;`, `&`, `|`), a program's name, a subcommand as a whole word
 * (`login`, not `--login` or `login=x`), or one of the flags: a long flag whole (`--user`, not
 * `--user-agent`), a short one perhaps with its value glued.
 */
const SCAN = new RegExp(
  `(?<end>[\\n;&|])` +
    `|(?<program>${atStart(`(?:${PROGRAM_NAMES})`, 'A-Za-z0-9_.-')}(?![A-Za-z0-9_-]))` +
    `|(?<subcommand>${atNameStart(`(?:${SUBCOMMANDS})`)}(?![^\\s"'\\\\;&|()<>]))` +
    `|(?<flag>${atNameStart(`(?:(?:${LONG_FLAGS})(?![A-Za-z0-9_-])|${SHORT_FLAGS})`)})`,
  'g',
);

interface Candidate {
  programs: ReadonlySet<string>;
  subcommand: string | undefined;
  value: RegExp;
}

/** For each flag, the programs it is secret for and how its value is read, in table order. */
const CANDIDATES = new Map<string, Candidate[]>();
for (const entry of PROGRAM_FLAGS) {
  for (const flag of entry.flags) {
    const list = CANDIDATES.get(flag) ?? [];
    list.push({
      programs: new Set(entry.programs),
      subcommand: entry.subcommand,
      value: valueAfter(entry, flag),
    });
    CANDIDATES.set(flag, list);
  }
}

/** Whether a program of `programs` was named (`named` holds one or two names). */
function namesAny(named: ReadonlySet<string>, programs: ReadonlySet<string>): boolean {
  for (const name of named) if (programs.has(name)) return true;
  return false;
}

/** The secret group of a value match: where it is and what it holds. */
function secretSpan(match: RegExpExecArray): { start: number; end: number; value: string } | undefined {
  for (const [name, value] of Object.entries(match.groups ?? {})) {
    if (value === undefined || !name.startsWith('secret')) continue;
    const [start, end] = match.indices!.groups![name]!;
    return { start, end, value };
  }
  return undefined;
}

/**
 * [start, end) and text of each secret given to a program flag (`mysql -phunter2`,
 * `curl -u admin:hunter2`, `docker login -p hunter2`) or to htpasswd or htdbm after its file and user,
 * left to right. One pass: a flag counts after its program's name (and its subcommand, if it
 * needs one) in the same command, and its value is read where the flag ends, every repeat
 * bounded.
 *
 * A subcommand counts wherever it stands after a program's name: `docker --context prod login`
 * still logs in. So `docker run --name login -p 80:80` loses its port to a marker, the lesser
 * mistake.
 */
export function programFlagSecrets(text: string): Array<{ start: number; end: number; value: string }> {
  const found: Array<{ start: number; end: number; value: string }> = [];
  const first = ANY_PROGRAM.exec(text);
  if (first === null) return found;
  const named = new Set<string>();
  const subcommands = new Set<string>();
  SCAN.lastIndex = first.index;
  for (let match = SCAN.exec(text); match !== null; match = SCAN.exec(text)) {
    const { end, program, subcommand, flag } = match.groups!;
    if (end !== undefined) {
      named.clear();
      subcommands.clear();
    } else if (program !== undefined && takesPasswordArgument(program)) {
      const span = passwordSecret(program, text, match.index + program.length);
      if (span) {
        found.push(span);
        SCAN.lastIndex = span.end;
      }
    } else if (program !== undefined) named.add(program);
    else if (subcommand !== undefined) {
      if (named.size > 0) subcommands.add(subcommand);
    } else if (flag !== undefined) {
      const at = match.index + flag.length;
      for (const candidate of CANDIDATES.get(flag) ?? []) {
        if (!namesAny(named, candidate.programs)) continue;
        if (candidate.subcommand !== undefined && !subcommands.has(candidate.subcommand)) continue;
        candidate.value.lastIndex = at;
        const value = candidate.value.exec(text);
        const span = value && secretSpan(value);
        if (!span) continue;
        found.push(span);
        SCAN.lastIndex = span.end;
        break;
      }
    }
  }
  return found;
}
