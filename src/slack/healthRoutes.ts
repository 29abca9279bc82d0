import type { CustomRoute } from '@slack/bolt';

export type HealthPart = 'redis' | 'slack' | 'host';

/** What readiness is made of: each answers "is this part up right now?". */
export interface HealthProbe {
  redis(): boolean;
  slack(): boolean;
  hosts(): boolean;
  /** Why a part is down, in one sentence an operator can act on; asked only about parts that are. */
  whyDown(part: HealthPart): string | undefined;
}

export function healthRoutes(probe: HealthProbe): CustomRoute[] {
  const parts = (): Record<HealthPart, boolean> => ({
    redis: probe.redis(),
    slack: probe.slack(),
    host: probe.hosts(),
  });
  const reasons = (status: Record<HealthPart, boolean>): Partial<Record<HealthPart, string>> => {
    const out: Partial<Record<HealthPart, string>> = {};
    for (const [part, up] of Object.entries(status) as Array<[HealthPart, boolean]>) {
      if (!up) out[part] = probe.whyDown(part) ?? `${part} is down`;
    }
    return out;
  };
  return [
    {
      path: '/healthz',
      method: ['GET'],
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok\n');
      },
    },
    {
      path: '/readyz',
      method: ['GET'],
      handler: (_req, res) => {
        const status = parts();
        const ready = status.redis && status.slack && status.host;
        res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ ready, ...status, reasons: reasons(status) })}\n`);
      },
    },
    {
      path: '/metrics',
      method: ['GET'],
      handler: (_req, res) => {
        const status = parts();
        const lines = Object.entries(status).map(
          ([part, up]) => `countersign_up{part="${part}"} ${up ? 1 : 0}`,
        );
        const memory = process.memoryUsage();
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(
          [
            '# HELP countersign_up Whether a part the bot depends on is up.',
            '# TYPE countersign_up gauge',
            ...lines,
            '# HELP process_resident_memory_bytes Resident memory size in bytes.',
            '# TYPE process_resident_memory_bytes gauge',
            `process_resident_memory_bytes ${memory.rss}`,
            '# HELP nodejs_heap_size_used_bytes V8 heap in use, in bytes.',
            '# TYPE nodejs_heap_size_used_bytes gauge',
            `nodejs_heap_size_used_bytes ${memory.heapUsed}`,
            '',
          ].join('\n'),
        );
      },
    },
  ];
}
