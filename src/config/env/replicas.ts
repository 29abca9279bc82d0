// The secret replicas seal what they hand each other with (replicas/replicaSeal.ts).

import { ConfigError } from '../common.js';
import { secretVar } from './read.js';

/** Shortest COUNTERSIGN_REPLICA_SECRET: 32 characters, as many bytes as the keys derived from it. */
const MIN_REPLICA_SECRET_LENGTH = 32;

export function replicaSecretVar(env: NodeJS.ProcessEnv): string | undefined {
  const fix =
    'set it to the same random string of at least 32 characters on every replica (e.g. `openssl rand -base64 48`), or unset it to use SLACK_BOT_TOKEN';
  const secret = secretVar(env, 'COUNTERSIGN_REPLICA_SECRET', fix);
  if (secret !== undefined && secret.length < MIN_REPLICA_SECRET_LENGTH) {
    // Never echoed, not even its length.
    throw new ConfigError(
      'COUNTERSIGN_REPLICA_SECRET',
      `COUNTERSIGN_REPLICA_SECRET is shorter than ${MIN_REPLICA_SECRET_LENGTH} characters: ${fix}`,
    );
  }
  return secret;
}
