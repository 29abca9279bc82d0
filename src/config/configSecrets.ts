// What in the configuration is secret, told by what a value means wherever it stands, not by a
// list of paths (a path list missed `routes[].escalation[].routingKey`, one level too deep):
//
//   - a key that names a secret (`botToken`, `signingSecret`, `routingKey`, `password`, …);
//   - a process's environment (a host's `env`): its values are API keys as often as not;
//   - the password of a URL, whichever setting the URL is in;
//   - a command line's secret flags and assignments, and any secret shape in any text.
//
// redactedConfig is the configuration as the start-up line shows it; configSecrets lists the
// values it hides, for the logger to keep out of every line it writes (log.ts).

import { maskCommandLine } from '../secrets/maskCommandLine.js';
import { maskSecrets } from '../secrets/maskSecrets.js';
import { REDACTED, SECRET_SET } from '../util/redacted.js';
import type { Config } from './config.js';

/** A key whose value is a secret wherever it stands. */
const SECRET_KEY = /token|secret|passw(?:or)?d|passphrase|routingkey|api_?key|credential|authorization/i;
/** A mapping of a process's environment: every value is hidden, the names are shown. */
const ENVIRONMENT_KEY = 'env';
const COMMAND_KEY = 'command';
/** `scheme://` and the authority up to the path, query or fragment. */
const URL_AUTHORITY = /^(?<scheme>[a-z][a-z0-9+.-]*:\/\/)(?<authority>[^/?#]*)/i;
/** What separates a secret from the words around it in a command line or a text. */
const WORD_BREAK = /[\s"'`=:@,;&|()<>]+/;

type Found = Set<string>;

/**
 * A copy of the config that is safe to log: each secret set shows as `[set]`, environment
 * values as `[redacted]`, URL passwords are replaced and secret shapes in text are masked.
 */
export function redactedConfig(config: Config): Config {
  return shown(config, undefined, new Set()) as Config;
}

/** The secret values of the config, as given and as a URL spells them. */
export function configSecrets(config: Config): string[] {
  const found: Found = new Set();
  shown(config, undefined, found);
  return [...found];
}

function shown(value: unknown, key: string | undefined, found: Found): unknown {
  if (value === undefined || value === null) return value;
  if (key !== undefined && SECRET_KEY.test(key)) {
    found.add(String(value));
    return SECRET_SET;
  }
  if (typeof value === 'string') {
    return key === COMMAND_KEY ? kept(value, maskCommandLine(value), found) : shownText(value, found);
  }
  if (Array.isArray(value)) return value.map((item) => shown(item, key, found));
  if (typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === ENVIRONMENT_KEY && isMapping(v) ? hiddenValues(v, found) : shown(v, k, found),
    ]),
  );
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hiddenValues(env: Record<string, unknown>, found: Found): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([name, value]) => {
      found.add(String(value));
      return [name, REDACTED];
    }),
  );
}

/** A text with its URL password replaced and its secret shapes masked. */
function shownText(text: string, found: Found): string {
  const { scheme = '', authority = '' } = URL_AUTHORITY.exec(text)?.groups ?? {};
  const userinfo = authority.slice(0, Math.max(authority.lastIndexOf('@'), 0));
  const colon = userinfo.indexOf(':');
  const password = colon < 0 ? '' : userinfo.slice(colon + 1);
  if (password === '') return kept(text, maskSecrets(text).text, found);
  found.add(password);
  found.add(decoded(password));
  const rest = text.slice(scheme.length + userinfo.length + 1);
  return `${scheme}${userinfo.slice(0, colon)}:${REDACTED}@${kept(rest, maskSecrets(rest).text, found)}`;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `masked`, noting the words of `text` that masking took out: those are the secrets. */
function kept(text: string, masked: string, found: Found): string {
  if (masked === text) return text;
  for (const word of text.split(WORD_BREAK)) if (word && !masked.includes(word)) found.add(word);
  return masked;
}
