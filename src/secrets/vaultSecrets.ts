import { equalsIndex, MAX_OPTION_WORDS, subcommandEnd } from './commandWords.js';

// HashiCorp Vault's `vault login [options] [AUTH K=V...]` takes its secret as plain arguments:
// a first argument without `=` is the token (`vault login hvs.X`, the token method's shorthand
// for `token=hvs.X`), and the auth method's `K=V` pairs hold a password or a secret id
// (`vault login -method=userpass username=u password=X`). Only their place says so, so the words
// after `login` are read as vault reads them (Go's flag package): options first, `-name=value`
// or `-name value` for an option that takes one, a single or double dash alike, up to the first
// other word or `--`; then the arguments. `-mfa method:passcode` holds a one-time passcode too.
// The same reading serves command text and an argv.

export const VAULT = 'vault';

/**
 * The options of `vault login` that take a value, which may be the next word: its own, and those
 * of every vault command that talks to a server or prints.
 */
const VALUE_OPTIONS = new Set([
  'method',
  'path',
  'field',
  'format',
  'address',
  'agent-address',
  'ca-cert',
  'ca-path',
  'client-cert',
  'client-key',
  'namespace',
  'ns',
  'tls-server-name',
  'wrap-ttl',
  'mfa',
  'header',
]);

/** Longer than any option of vault's. */
const MAX_OPTION_NAME_CHARS = 64;

/**
 * Auth arguments whose value is secret: `password` (userpass, ldap, okta, radius), `passcode` and
 * `totp` (one-time codes), `token` (token, github), `secret_id` (approle), `secret_key` and
 * `security_token` (alicloud), `aws_secret_access_key` and `aws_security_token` (aws). The names
 * (`username`, `role_id`, `role`) and the method stay readable.
 */
const SECRET_KEYS = new Set([
  'password',
  'passcode',
  'totp',
  'token',
  'secret_id',
  'secret_key',
  'security_token',
  'aws_secret_access_key',
  'aws_security_token',
]);

/** A word of vault's arguments that holds a secret, from `from` (after a key's `=`) to its end. */
export interface VaultSecret {
  index: number;
  from: number;
}

/** The name of an option word (`-name`, `--name`, `-name=value`). */
function optionName(word: string): string {
  const equals = equalsIndex(word);
  return word.slice(word.startsWith('--') ? 2 : 1, equals < 0 ? undefined : equals);
}

/** Whether an option word (`-name`, `--name`) names an option that takes the next word as its value. */
function takesNextWord(word: string): boolean {
  if (word.length > MAX_OPTION_NAME_CHARS || equalsIndex(word) >= 0) return false;
  return VALUE_OPTIONS.has(optionName(word));
}

/**
 * A shell's reference or substitution (`$VAULT_TOKEN`, `$(cat token)`), `-` (read from stdin) or
 * a flag: not the secret itself.
 */
function isReference(value: string): boolean {
  return value === '' || value.startsWith('$') || value.startsWith('-');
}

/** The option whose value (`method:passcode`) holds a one-time passcode after its method. */
const MFA = 'mfa';
/** Longer than any MFA method's name or id. */
const MAX_MFA_METHOD_CHARS = 256;

/**
 * Where the passcode starts in `value`, the value of `-mfa` starting at `at` of its word: after
 * the method's colon (`totp:123456`); undefined when there is none (`-mfa=duo_push`), or it is a
 * reference. A value that holds quotes (`"totp:1"`, read as written) is secret whole, so that no
 * quote is masked without its pair.
 */
function passcodeFrom(word: string, at: number): number | undefined {
  const colon = word.slice(at, at + MAX_MFA_METHOD_CHARS).indexOf(':');
  if (colon < 0) return undefined;
  const from = at + colon + 1;
  if (isReference(word.slice(from))) return undefined;
  return /['"]/.test(word.slice(at, from)) ? at : from;
}

/**
 * The words after vault's name, given by `wordAt` (`wordAt(0)` the first), that hold a secret of
 * `vault login`; none for another subcommand. A word after an option vault does not take a value
 * for may be the value of an option this does not know: then the token may be the word after it,
 * and both are masked, the lesser mistake. Words are asked for in order, a bounded number.
 */
export function vaultLoginSecrets(wordAt: (i: number) => unknown): VaultSecret[] {
  const start = subcommandEnd(['login'], wordAt);
  if (start === undefined) return [];
  const found: VaultSecret[] = [];
  let options = true;
  let valueNext = false;
  // Whether the value of `-mfa` is the next word.
  let mfaNext = false;
  // Plain words (no `=`) that may be the token: one, or two after an option not known.
  let tokens = 1;
  for (let i = start; i < start + MAX_OPTION_WORDS; i++) {
    const word = wordAt(i);
    if (typeof word !== 'string') break;
    if (options) {
      if (valueNext) {
        const from = mfaNext ? passcodeFrom(word, 0) : undefined;
        if (from !== undefined) found.push({ index: i, from });
        valueNext = false;
        continue;
      }
      if (word === '--') {
        options = false;
        continue;
      }
      if (word.length > 1 && word.startsWith('-')) {
        const equals = equalsIndex(word);
        const mfa = optionName(word) === MFA;
        const from = mfa && equals >= 0 ? passcodeFrom(word, equals + 1) : undefined;
        if (from !== undefined) found.push({ index: i, from });
        valueNext = takesNextWord(word);
        mfaNext = valueNext && mfa;
        tokens = valueNext || equals >= 0 ? 1 : 2;
        continue;
      }
      options = false;
    }
    const equals = equalsIndex(word);
    if (equals < 0) {
      if (tokens > 0 && !isReference(word)) found.push({ index: i, from: 0 });
      tokens -= 1;
    } else if (SECRET_KEYS.has(word.slice(0, equals).toLowerCase()) && !isReference(word.slice(equals + 1))) {
      found.push({ index: i, from: equals + 1 });
    }
  }
  return found;
}
