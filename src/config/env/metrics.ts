// METRICS_PORT: where /metrics is served, never on PORT, the port Slack reaches (HTTP mode).

import { z } from 'zod';
import { ConfigError, shown } from '../common.js';
import { check, read } from './read.js';

const port = z
  .string()
  .regex(/^\d{1,5}$/)
  .transform(Number)
  .pipe(z.number().int().min(1).max(65535));

/** `{ metricsPort }` when METRICS_PORT is set; `{}` when it is not. */
export function metricsConfig(env: NodeJS.ProcessEnv, mainPort: number): { metricsPort?: number } {
  const raw = read(env, 'METRICS_PORT');
  if (raw === undefined) return {};
  const metricsPort = check(
    'METRICS_PORT',
    raw,
    port,
    `must be an integer from 1 to 65535 (got ${shown(raw)}): fix it, or unset it to turn /metrics off`,
  );
  if (metricsPort === mainPort) {
    throw new ConfigError(
      'METRICS_PORT',
      `METRICS_PORT ${metricsPort} is also PORT: set it to another port (PORT never serves /metrics), or unset it to turn /metrics off`,
    );
  }
  return { metricsPort };
}
