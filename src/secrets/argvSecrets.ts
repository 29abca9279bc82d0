import { CF, cfAuthPasswordIndex } from './cfSecrets.js';
import {
  isLongFlag,
  PROGRAM_FLAGS,
  type ProgramFlag,
  programFlagsApply,
  SECRET_FLAG_WORD,
} from './commandLineRules.js';
import { passwordIndex, takesPasswordArgument } from './htpasswdSecrets.js';
import { maskMarker, valueMarker } from './maskSecrets.js';
import { VAULT, vaultLoginSecrets } from './vaultSecrets.js';

// In an argv a flag and its value are two words, each masked on its own by maskSecrets: neither
// `--password` nor `hunter2` looks secret alone. Here a word is masked for where it stands: after
// a secret flag (`--password`, `aws_secret_access_key`), or as the value of a program's flag
// once that program was named (`mysql … -phunter2`, `curl … -u admin:hunter2`), and its
// subcommand where the flag needs one (`docker login … -p hunter2`), or as htpasswd's password
// or htdbm's after its file and user (`htpasswd -b file user hunter2`), or as cf's after
// `auth` and the user (`cf auth admin hunter2`), or as vault's token, password or MFA passcode
// after `login` (`vault login hvs.X`, `vault login -method=userpass … password=X`, `-mfa=totp:X`).

// The words are raw (intake cuts them afterwards), so whatever is read of them is bounded: an
// agent may send ten thousand words of megabytes each.

/** Longer than any program path or flag this reads. */
const MAX_NAME_CHARS = 256;
/** Longer than any token shape the marker is named by. */
const MAX_SHAPED_CHARS = 16 * 1024;

/** The program a word names: its file name (`/usr/bin/curl` names curl). */
function programOf(word: string): string | undefined {
  return word.length > MAX_NAME_CHARS ? undefined : word.slice(word.lastIndexOf('/') + 1);
}

/**
 * A command substitution (`$(…)`, backticks) or a process substitution (`<(…)`, `>(…)`). An argv
 * word is passed as it is, but it may still reach a shell that runs it (`sh -c 'eval "$2"' _
 * --token …`), which the bot cannot tell: such a word stays in view, as masking may hide a
 * secret's characters, never code.
 */
const SUBSTITUTION = /\$\(|`|[<>]\(/;

/** The marker for a whole word, named by its shape when the word is short enough to have one. */
function wordMarker(word: string): string | undefined {
  if (word.length > MAX_SHAPED_CHARS) return maskMarker('secret-value');
  return SUBSTITUTION.test(word) ? undefined : valueMarker(word);
}

/** Where a user name or a cookie's name ends, if anywhere. */
function head(value: string): string {
  return value.slice(0, MAX_NAME_CHARS + 1);
}

function isSecretFlag(word: string): boolean {
  return word.length <= MAX_NAME_CHARS && SECRET_FLAG_WORD.test(word);
}

function isValueWord(word: string): boolean {
  return word !== '' && !word.startsWith('-');
}

/** `value` with its secret part masked, as `entry` reads it; undefined when nothing is secret. */
function maskedValue(entry: ProgramFlag, value: string): string | undefined {
  switch (entry.secret) {
    case 'whole':
      return wordMarker(value);
    case 'cookie':
      return head(value).includes('=') ? wordMarker(value) : undefined;
    case 'afterColon':
      return maskedAfter(value, head(value).indexOf(':') + 1);
    case 'afterPercent':
      return maskedAfter(value, head(value).indexOf('%') + 1);
    case 'afterPass':
      return maskedAfter(value, value.startsWith('pass:') ? 'pass:'.length : 0);
  }
}

/** `value` masked from `from` on, what comes before kept; undefined when `from` is 0 (no lead). */
function maskedAfter(value: string, from: number): string | undefined {
  const secret = value.slice(from);
  const marker = from === 0 || secret === '' ? undefined : wordMarker(secret);
  return marker === undefined ? undefined : `${value.slice(0, from)}${marker}`;
}

/**
 * `word` masked as the value of one of `entry`'s flags: glued to a short flag (`-phunter2`),
 * after a long one's `=`, or as the word after the flag (`previous`).
 */
function maskedFlagValue(entry: ProgramFlag, previous: string | undefined, word: string): string | undefined {
  for (const flag of entry.flags) {
    const long = isLongFlag(flag);
    if (previous === flag && (long || entry.nextWord) && isValueWord(word)) return maskedValue(entry, word);
    const glued = long ? `${flag}=` : flag;
    if (word.length > glued.length && word.startsWith(glued)) {
      const masked = maskedValue(entry, word.slice(glued.length));
      if (masked !== undefined) return `${glued}${masked}`;
    }
  }
  return undefined;
}

/**
 * Marks in `out` the password `program` (htpasswd, htdbm) takes from `argv`, its arguments
 * starting at `from`.
 */
function maskPasswordArgument(
  program: string,
  argv: readonly unknown[],
  from: number,
  out: Array<string | undefined>,
): void {
  const index = passwordIndex(program, (i) => argv[from + i]);
  if (index === undefined) return;
  const password = argv[from + index];
  if (typeof password === 'string' && password !== '') out[from + index] = wordMarker(password);
}

/** Marks in `out` the secrets `vault login` takes from `argv`, vault's arguments starting at `from`. */
function maskVaultLogin(argv: readonly unknown[], from: number, out: Array<string | undefined>): void {
  for (const secret of vaultLoginSecrets((i) => argv[from + i])) {
    const word = argv[from + secret.index] as string;
    const marker = wordMarker(word.slice(secret.from));
    if (marker !== undefined) out[from + secret.index] = `${word.slice(0, secret.from)}${marker}`;
  }
}

/** Marks in `out` the password `cf auth` takes from `argv`, cf's arguments starting at `from`. */
function maskCfAuth(argv: readonly unknown[], from: number, out: Array<string | undefined>): void {
  const index = cfAuthPasswordIndex((i) => argv[from + i]);
  if (index === undefined) return;
  const password = argv[from + index] as string;
  if (password !== '') out[from + index] = wordMarker(password);
}

/**
 * For each word of `argv`, the word masked when it is secret for where it stands, else
 * undefined. Items that are not strings (an array of unknown shape) are skipped.
 */
export function argvSecrets(argv: readonly unknown[]): Array<string | undefined> {
  const out: Array<string | undefined> = new Array(argv.length).fill(undefined);
  const named = new Set<ProgramFlag>();
  let previous: string | undefined;
  for (const [i, word] of argv.entries()) {
    if (typeof word !== 'string') {
      previous = undefined;
      continue;
    }
    if (previous !== undefined && isSecretFlag(previous) && isValueWord(word)) out[i] = wordMarker(word);
    for (const entry of named) out[i] ??= maskedFlagValue(entry, previous, word);
    const program = programOf(word);
    if (program !== undefined && takesPasswordArgument(program))
      maskPasswordArgument(program, argv, i + 1, out);
    else if (program === VAULT) maskVaultLogin(argv, i + 1, out);
    else if (program !== undefined) {
      if (program === CF) maskCfAuth(argv, i + 1, out);
      for (const entry of PROGRAM_FLAGS) {
        if (entry.programs.includes(program) && programFlagsApply(entry, (k) => argv[i + 1 + k]))
          named.add(entry);
      }
    }
    previous = word;
  }
  return out;
}
