// The secret shapes masked in agent text before it is stored, shown or logged.
//
// Written here rather than taken from a rule set: secretlint's recommended preset (the best kept
// one on npm) only runs inside its asynchronous lint engine, which costs about 0.1 ms per string
// (a dozen strings per approval would double the bot's CPU per approval) and cannot run inside
// the record mutations, which are synchronous and pure; it also has no JWT, Authorization header
// or `password=` rules. gitleaks' rules come with a Go binary. The token shapes below follow
// those two projects' rules.
//
// Every rule starts with a literal or a word boundary and every repeat is bounded, so scanning is
// linear in the text: no rule can be made to backtrack across a long run of similar characters.

export interface SecretRule {
  /** Shown in the marker: `[masked <label>]`. */
  label: string;
  /** Regex source. Groups named `secret…` hold the part to mask; without one the whole match is. */
  source: string;
}

/** `[Pp][Aa]…`: the combined expression cannot take the `i` flag without loosening token shapes. */
function anyCase(word: string): string {
  return word.replace(/[a-z]/g, (c) => `[${c.toUpperCase()}${c}]`);
}

const SECRET_KEYS = [
  'passw(?:or)?d',
  'passphrase',
  'secret',
  'token',
  'api[_-]?key',
  'access[_-]?key',
  'private[_-]?key',
]
  .map(anyCase)
  .join('|');

/** A value that is already a marker is not masked again: masking is idempotent. */
const NOT_A_MARKER = '(?!\\[masked [a-z-]{1,40}\\])';

/**
 * A value after `key=` / `key: `, quoted (also with JSON-escaped quotes, as inside rawArgs) or
 * bare. Quoted values may hold spaces; an empty value is no secret.
 */
const VALUE =
  `(?:\\\\?"${NOT_A_MARKER}(?<secretDq>[^"\\r\\n]{1,1024}?)\\\\?"` +
  `|\\\\?'${NOT_A_MARKER}(?<secretSq>[^'\\r\\n]{1,1024}?)\\\\?'` +
  `|${NOT_A_MARKER}(?<secretBare>[^\\s"'\\\\,;&<>\\]}]{1,1024}))`;

const AUTH_SCHEMES = ['bearer', 'basic', 'token', 'bot', 'digest', 'negotiate'].map(anyCase).join('|');

export const SECRET_RULES: readonly SecretRule[] = [
  {
    label: 'private-key',
    // An unterminated block (cut off, or pasted half) is masked to the end of the text.
    source:
      '-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\\s\\S]*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)',
  },
  { label: 'slack-token', source: '\\b(?:xox[abposre]|xapp)-[0-9A-Za-z-]{10,250}' },
  {
    label: 'slack-webhook',
    source: 'hooks\\.slack\\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,250}',
  },
  {
    label: 'github-token',
    source: '\\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})\\b',
  },
  {
    label: 'aws-access-key',
    source: '\\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}\\b',
  },
  {
    // OpenAI (sk-…, sk-proj-…), Anthropic (sk-ant-…) and alike: at least 20 characters with a
    // digit among them, so `sk-` inside a word or a kebab-case name is left alone.
    label: 'api-key',
    source:
      '(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]{20})(?=[A-Za-z_-]{0,400}[0-9])[A-Za-z0-9_-]{20,400}|\\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,247}',
  },
  { label: 'jwt', source: '\\beyJ[A-Za-z0-9_-]{5,4096}\\.eyJ[A-Za-z0-9_-]{5,8192}\\.[A-Za-z0-9_-]{0,4096}' },
  {
    // `Authorization: Bearer x`, `"authorization": "Basic x"`, `-H 'Proxy-Authorization: x'`:
    // the header name and scheme stay readable, the credential goes.
    label: 'authorization',
    source: `(?<![A-Za-z0-9_-])(?:${anyCase('proxy-')})?${anyCase('authorization')}\\\\?["']?[ \\t]{0,8}[:=][ \\t]{0,8}\\\\?["']?(?:(?:${AUTH_SCHEMES})[ \\t]{1,8}|(?!(?:${AUTH_SCHEMES})[ \\t]))${NOT_A_MARKER}(?<secretAuth>[^\\s"'\\\\,;]{1,4096})`,
  },
  {
    label: 'bearer-token',
    source: `\\b${anyCase('bearer')}[ \\t]{1,8}(?<secretBearer>[A-Za-z0-9._~+/-]{16,4096}=*)`,
  },
  {
    // `password=x`, `DB_PASSWORD=x`, `"api_key": "x"`, `token: x`, `?access_token=x&`: the key
    // stays, its value goes. The match starts at the keyword, so any prefix may come before it.
    label: 'secret-value',
    source: `(?:${SECRET_KEYS})\\\\?["']?[ \\t]{0,8}[:=][ \\t]{0,8}${VALUE}`,
  },
  {
    label: 'url-password',
    source: `(?<=://)[^\\s/@:"'\\\\]{1,256}:(?<secretUrl>[^\\s/@"'\\\\]{1,256})(?=@)`,
  },
];
