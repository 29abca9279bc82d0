import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import type { HealthPart, HealthProbe } from '../../../src/slack/healthRoutes.js';
import { ReadinessLog } from '../../../src/slack/readinessLog.js';
import { captureLogger } from '../../support/logCapture.js';

// PORT's /readyz says ready or not alone (PORT may be public): the log says when that changes, and
// why, for an operator without METRICS_PORT.

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A probe whose parts the test sets; a part that is down says why, a host quoting its stderr. */
function probeOf(up: Record<HealthPart, boolean>): HealthProbe {
  return {
    redis: () => up.redis,
    slack: () => up.slack,
    hosts: () => up.host,
    whyDown: (part) =>
      part === 'host' ? 'MSP_HOST_COMMAND exited with code 1: muse: no licence' : `${part} is away`,
  };
}

function started(up: Record<HealthPart, boolean>) {
  const { logger, lines } = captureLogger();
  const log = new ReadinessLog(probeOf(up), logger, { intervalMs: 1_000, graceMs: 10_000 });
  log.start();
  const said = () => lines.map(({ level, msg, ready, reasons }) => ({ level, msg, ready, reasons }));
  return { log, said };
}

it('says once when the replica becomes ready, once when it is not, with the reasons, and once when it is back', async () => {
  const up = { redis: true, slack: false, host: false };
  const { log, said } = started(up);
  // Waiting for auth.test at start-up is no news.
  await vi.advanceTimersByTimeAsync(3_000);
  expect(said()).toEqual([]);
  up.slack = true;
  await vi.advanceTimersByTimeAsync(5_000);
  const ready = {
    level: 30,
    msg: 'ready (/readyz answers 200)',
    ready: true,
    // A host that is down leaves the replica ready; what it wrote is in the log anyway.
    reasons: { host: 'MSP_HOST_COMMAND exited with code 1: muse: no licence' },
  };
  expect(said()).toEqual([ready]);

  up.redis = false;
  await vi.advanceTimersByTimeAsync(5_000);
  const notReady = {
    level: 40,
    msg: 'not ready (/readyz answers 503)',
    ready: false,
    reasons: { redis: 'redis is away', host: 'MSP_HOST_COMMAND exited with code 1: muse: no licence' },
  };
  expect(said()).toEqual([ready, notReady]);

  up.redis = true;
  up.host = true;
  await vi.advanceTimersByTimeAsync(5_000);
  expect(said()).toEqual([ready, notReady, { ...ready, reasons: {} }]);

  log.stop();
  up.slack = false;
  await vi.advanceTimersByTimeAsync(5_000);
  expect(said()).toHaveLength(3);
});

it('a replica not ready past the start-up grace says so, and why', async () => {
  const { log, said } = started({ redis: false, slack: false, host: false });
  await vi.advanceTimersByTimeAsync(9_000);
  expect(said()).toEqual([]);
  await vi.advanceTimersByTimeAsync(20_000);
  expect(said()).toEqual([
    {
      level: 40,
      msg: 'not ready (/readyz answers 503)',
      ready: false,
      reasons: {
        redis: 'redis is away',
        slack: 'slack is away',
        host: 'MSP_HOST_COMMAND exited with code 1: muse: no licence',
      },
    },
  ]);
  log.stop();
});
