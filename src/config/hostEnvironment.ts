// What an MSP host's process inherits of the bot's environment: all of it but the bot's own
// settings. The host runs the agent being gated, and whatever the agent's shell can read it can
// use: with SLACK_SIGNING_SECRET it could sign a press on its own card. An allow-list would cut
// off what a host such as `muse serve` needs (its provider keys, exported beside the bot's), so
// the bot's settings are withheld instead: every variable named by one of its prefixes, and the
// two it reads with none (docs/configuration.md lists them all; a unit test checks that each
// name loadConfig reads is withheld). A host's own `env` from the file is added after, and wins.

/** The prefixes of the bot's settings: any such variable is the bot's, read now or later. */
const SETTING_PREFIXES: readonly string[] = [
  'SLACK_',
  'REDIS_',
  'COUNTERSIGN_',
  'PAGERDUTY_',
  'MSP_',
  'METRICS_',
];
/** The bot's settings without one of its prefixes. */
const SETTING_NAMES: ReadonlySet<string> = new Set(['PORT', 'LOG_LEVEL']);

/** Whether `name` is one of the bot's own settings, which no host inherits. */
export function isBotSetting(name: string): boolean {
  return SETTING_NAMES.has(name) || SETTING_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/** The names of `botEnv` a host does not inherit, sorted (for the start-up line: names only). */
export function withheldSettings(botEnv: NodeJS.ProcessEnv): string[] {
  return Object.keys(botEnv)
    .filter((name) => botEnv[name] !== undefined && isBotSetting(name))
    .sort();
}

/** A host's environment: `botEnv` without the bot's settings, then the host's own `env`. */
export function hostEnvironment(
  botEnv: NodeJS.ProcessEnv,
  own: Readonly<Record<string, string>> | undefined,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(botEnv)) {
    if (value !== undefined && !isBotSetting(name)) env[name] = value;
  }
  return { ...env, ...own };
}
