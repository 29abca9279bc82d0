// The secret shapes masked in agent text before it is stored, shown or logged.
//
// Written here rather than taken from a rule set, checked again against secretlint 13.0.7, the
// best kept set on npm. Its recommended preset still runs only inside the asynchronous lint
// engine (lintSource returns a promise), which the record mutations, synchronous and pure, cannot
// wait for, and costs far more per string (docs/performance.md, "Secret masking"). Its patterns
// are not exported to be combined, and it has no rule for a Google API key, a JWT, an
// Authorization or Cookie header, `password=`, or a secret given as a flag's value. gitleaks'
// rules come with a Go binary and are written for Go's regexp (inline `(?i)`, which JavaScript
// cannot take). The token shapes below follow those two projects' rules; the command-line ones
// are in commandLineRules.ts.
//
// Every rule starts with literal characters and every repeat is bounded, so scanning is linear in
// the text: no rule can be made to backtrack across a long run of similar characters. A
// look-behind comes after the literal it guards (ruleParts.atStart), never first: one first would
// be tried at every character, twenty times the cost of the whole scan.

import { SECRET_FLAG_RULE } from './commandLineRules.js';
import { anyCase, atNameStart, atStart, atWordStart, keyValue, NOT_A_MARKER } from './ruleParts.js';

export interface SecretRule {
  /** Shown in the marker: `[masked <label>]`. */
  label: string;
  /** Regex source. Groups named `secret…` hold the part to mask; without one the whole match is. */
  source: string;
}

const SECRET_KEYS = [
  'passw(?:or)?d',
  'passphrase',
  // `secret_id=` too (Vault AppRole): the `_id` would otherwise end the key before its `=`.
  'secret(?:[_-]?id)?',
  'token',
  'api[_-]?key',
  'access[_-]?key',
  'private[_-]?key',
]
  .map(anyCase)
  .join('|');

const AUTH_SCHEMES = ['bearer', 'basic', 'token', 'bot', 'digest', 'negotiate'].map(anyCase).join('|');

/** One cookie: its name and `=value`, or a bare value. */
const COOKIE = `[^\\s;=,"'\\\\]{1,256}(?:=[^\\s;,"'\\\\]{0,4096})?`;

/** What separates a key from its value: `=`, `: `, `"key": ` in JSON. */
const KEY_SEPARATOR = `\\\\?["']?[ \\t]{0,8}[:=][ \\t]{0,8}`;

export const SECRET_RULES: readonly SecretRule[] = [
  {
    label: 'private-key',
    // An unterminated block (cut off, or pasted half) is masked to the end of the text.
    source:
      '-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\\s\\S]*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)',
  },
  { label: 'slack-token', source: `${atWordStart('(?:xox[abposre]|xapp)')}-[0-9A-Za-z-]{10,250}` },
  {
    // Incoming webhooks and response_urls (actions, commands: they post to the channel they came
    // from). Also with JSON's escaped slashes (`hooks.slack.com\/services\/T…`).
    label: 'slack-webhook',
    source:
      'hooks\\.slack\\.com\\\\?/(?:services|workflows|triggers|actions|commands)\\\\?/(?:\\\\/|[A-Za-z0-9_/-]){20,250}',
  },
  {
    label: 'github-token',
    source: `(?:${atWordStart('gh[pousr]_')}[A-Za-z0-9]{36,251}|${atWordStart('github_pat_')}[A-Za-z0-9_]{22,255})\\b`,
  },
  {
    // Personal, deploy, runner, CI job, trigger, feed, SCIM, OAuth and agent tokens; the routable
    // ones end in `.<9 characters>`.
    label: 'gitlab-token',
    source: `${atWordStart('gl(?:pat|dt|rt|cbt|ptt|ft|imt|soat|oas|agent|ffct)-')}[0-9A-Za-z_-]{20,300}(?:\\.[0-9a-z]{9})?`,
  },
  {
    // HashiCorp Vault's service, batch and recovery tokens (since Vault 1.10): wherever they
    // appear, not only after `vault login` (vaultSecrets.ts), e.g. `vault token lookup hvs.…`.
    label: 'vault-token',
    source: `${atWordStart('hv[sbr]\\.')}[A-Za-z0-9_-]{24,512}`,
  },
  {
    // Vault's service tokens before 1.10: `s.` and exactly 24 letters and digits, both cases among
    // them as in any random token. Not inside a dotted or kebab-case name (`a.s.…`, `x-s.…`), nor
    // as a file name (`….txt`) or a method (`s.dispatchPendingApprovals()`), which `s.` often is.
    label: 'vault-token',
    source: `${atStart('s\\.', 'A-Za-z0-9_.-')}(?=[A-Za-z0-9]{0,23}[A-Z])(?=[A-Za-z0-9]{0,23}[a-z])[A-Za-z0-9]{24}(?![A-Za-z0-9_(-]|\\.[A-Za-z0-9])`,
  },
  { label: 'npm-token', source: `${atWordStart('npm_')}[A-Za-z0-9]{36}(?![A-Za-z0-9_])` },
  { label: 'google-api-key', source: `${atWordStart('AIza')}[0-9A-Za-z_-]{35}` },
  { label: 'stripe-key', source: `${atWordStart('[rs]k_')}(?:live|test|prod)_[A-Za-z0-9]{10,247}` },
  {
    label: 'aws-access-key',
    source: `${atWordStart('(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)')}[A-Z0-9]{16}\\b`,
  },
  {
    // OpenAI (sk-…, sk-proj-…), Anthropic (sk-ant-…) and alike: at least 20 characters with a
    // digit among them, so `sk-` inside a word or a kebab-case name is left alone.
    label: 'api-key',
    source: `${atNameStart('sk-')}(?=[A-Za-z0-9_-]{20})(?=[A-Za-z_-]{0,400}[0-9])[A-Za-z0-9_-]{20,400}`,
  },
  {
    label: 'jwt',
    source: `${atWordStart('eyJ')}[A-Za-z0-9_-]{5,4096}\\.eyJ[A-Za-z0-9_-]{5,8192}\\.[A-Za-z0-9_-]{0,4096}`,
  },
  {
    // `Authorization: Bearer x`, `"authorization": "Basic x"`, `-H 'Proxy-Authorization: x'`:
    // the header name and scheme stay readable, the credential goes.
    label: 'authorization',
    source: `${atNameStart(`(?:${anyCase('proxy-')})?${anyCase('authorization')}`)}\\\\?["']?[ \\t]{0,8}[:=][ \\t]{0,8}\\\\?["']?(?:(?:${AUTH_SCHEMES})[ \\t]{1,8}|(?!(?:${AUTH_SCHEMES})[ \\t]))${NOT_A_MARKER}(?<secretAuth>[^\\s"'\\\\,;]{1,4096})`,
  },
  {
    label: 'bearer-token',
    source: `${atWordStart(anyCase('bearer'))}[ \\t]{1,8}(?<secretBearer>[A-Za-z0-9._~+/-]{16,4096}=*)`,
  },
  {
    // `Cookie: a=1; b=2`, `Set-Cookie: id=…; Path=/`, `"cookie": "…"`, `--cookie=…`: the
    // name=value list goes, up to what cannot be in it (a blank, a quote), so the rest of an
    // unquoted command line stays readable.
    label: 'cookie',
    source: `${atWordStart(anyCase('cookie'))}${KEY_SEPARATOR}\\\\?["']?${NOT_A_MARKER}(?<secretCookie>${COOKIE}(?:;[ \\t]{0,8}${COOKIE}){0,64})`,
  },
  SECRET_FLAG_RULE,
  {
    // `password=x`, `DB_PASSWORD=x`, `"api_key": "x"`, `token: x`, `?access_token=x&`: the key
    // stays, its value goes. The match starts at the keyword, so any prefix may come before it.
    label: 'secret-value',
    source: `(?:${SECRET_KEYS})${KEY_SEPARATOR}${keyValue('')}`,
  },
  {
    // `FOO_PASS=x`, `AWS_KEY=x`, `MYSQL_PWD=x`, `smtp_pass: x`: names that end so. `_KEY` only
    // upper-case, as environment variables are: `sort_key=name` is no secret.
    label: 'secret-value',
    source: `_(?:(?:KEY|PASS|PWD)(?<=[A-Z0-9]_[A-Z]{3,4})|pass(?<=[a-z0-9]_pass))${KEY_SEPARATOR}${keyValue('Suffix')}`,
  },
  {
    // `https://user:x@host`, and `redis://:x@host`: a password without a user name.
    label: 'url-password',
    source: `://[^\\s/@:"'\\\\]{0,256}:(?<secretUrl>[^\\s/@"'\\\\]{1,256})(?=@)`,
  },
];
