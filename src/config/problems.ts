import { ConfigError } from './common.js';

// Every invalid setting at once: an operator who fixes one variable, restarts, and only then
// meets the next one wastes a deploy per mistake. Each part of the configuration is read on its
// own; a part that fails is kept for the end and the others are read all the same.

/** Several settings are wrong; `errors` holds one ConfigError (one line) per setting. */
export class ConfigErrors extends ConfigError {
  constructor(readonly errors: readonly ConfigError[]) {
    super(errors[0]!.variable, errors[0]!.message);
    // One line per setting: each message is already one line (ConfigError).
    this.message = errors.map((e) => e.message).join('\n');
  }
}

/** The ConfigErrors a read may have thrown, one per setting. */
export function eachConfigError(err: ConfigError): readonly ConfigError[] {
  return err instanceof ConfigErrors ? err.errors : [err];
}

export class ConfigProblems {
  private readonly errors: ConfigError[] = [];

  /**
   * What `read` returns, or undefined when it threw a ConfigError (kept for throwIfAny). A part
   * read from one that failed is not read at all (callers check for undefined first): its error
   * would only repeat the first one in other words.
   */
  take<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      this.errors.push(...eachConfigError(err));
      return undefined;
    }
  }

  /** Throws the one ConfigError, or a ConfigErrors with all of them; nothing when all was well. */
  throwIfAny(): void {
    if (this.errors.length === 1) throw this.errors[0];
    if (this.errors.length > 1) throw new ConfigErrors(this.errors);
  }
}
