import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/common.js';
import { metricsConfig } from '../../../src/config/env/metrics.js';

function problem(env: NodeJS.ProcessEnv, port = 3000): ConfigError {
  try {
    metricsConfig(env, port);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('METRICS_PORT', () => {
  it('is optional: unset or empty, /metrics is off (PORT never serves it)', () => {
    expect(metricsConfig({}, 3000)).toEqual({});
    expect(metricsConfig({ METRICS_PORT: '  ' }, 3000)).toEqual({});
  });

  it('takes a port of its own', () => {
    expect(metricsConfig({ METRICS_PORT: '9464' }, 3000)).toEqual({ metricsPort: 9464 });
  });

  it.each(['abc', '0', '-1', '65536', '9464.5', '1e3'])('rejects METRICS_PORT=%s on one line', (value) => {
    const err = problem({ METRICS_PORT: value });
    expect(err.variable).toBe('METRICS_PORT');
    expect(err.message).toBe(
      `METRICS_PORT must be an integer from 1 to 65535 (got "${value}"): fix it, or unset it to turn /metrics off`,
    );
  });

  it('refuses the same port as PORT', () => {
    const err = problem({ METRICS_PORT: '3000' }, 3000);
    expect(err.variable).toBe('METRICS_PORT');
    expect(err.message).toBe(
      'METRICS_PORT 3000 is also PORT: set it to another port (PORT never serves /metrics), or unset it to turn /metrics off',
    );
  });
});
