import type { CustomRoute } from '@slack/bolt';
import type { Logger } from 'pino';
import type { PromMetrics } from './promMetrics.js';

/** GET /metrics: the registry's text, or 500 and one log line when a collector failed. */
export function metricsRoute(metrics: PromMetrics, logger: Logger): CustomRoute {
  return {
    path: '/metrics',
    method: ['GET'],
    handler: (_req, res) => {
      metrics.text().then(
        (text) => {
          res.writeHead(200, { 'content-type': metrics.contentType });
          res.end(text);
        },
        (err: unknown) => {
          logger.error({ err }, 'could not collect the metrics');
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('metrics unavailable\n');
        },
      );
    },
  };
}
