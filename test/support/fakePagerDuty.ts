// A fake PagerDuty for the bot process: Events API v2 (POST /v2/enqueue) and the REST on-calls
// API (GET /oncalls). The bot runs as a separate process, so nock cannot reach it; this can.

import http from 'node:http';

export interface PagerDutyEvent {
  routing_key: string;
  event_action: 'trigger' | 'resolve' | 'acknowledge';
  dedup_key: string;
  payload?: { summary: string; source: string; custom_details?: Record<string, unknown> };
  at: number;
}

export class FakePagerDuty {
  readonly events: PagerDutyEvent[] = [];
  readonly oncallRequests: string[] = [];
  /** Answers of GET /oncalls; a number is an HTTP status to fail with. */
  oncalls:
    | Array<{ escalation_level: number; user: { id: string; summary: string; email: string } }>
    | number = [];
  /** Statuses to answer the next events with (then 202). */
  failEvents: number[] = [];
  /** While true, events are taken in but never answered (a PagerDuty that hangs): see `held`. */
  holdEvents = false;
  /** Events taken in while `holdEvents`, never answered and not in `events`. */
  readonly held: PagerDutyEvent[] = [];

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  static async start(): Promise<FakePagerDuty> {
    let fake: FakePagerDuty | undefined;
    const server = http.createServer((req, res) => fake!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('FakePagerDuty: no port');
    fake = new FakePagerDuty(server, address.port);
    return fake;
  }

  get eventsUrl(): string {
    return `http://127.0.0.1:${this.port}/v2/enqueue`;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  /** The bot's environment for this fake. */
  env(routingKey = 'R0UTINGKEY0000000000000000000000'): Record<string, string> {
    return {
      PAGERDUTY_ROUTING_KEY: routingKey,
      PAGERDUTY_API_TOKEN: 'pdtoken0000000000000',
      PAGERDUTY_EVENTS_URL: this.eventsUrl,
      PAGERDUTY_API_URL: this.apiUrl,
    };
  }

  eventsOf(action: PagerDutyEvent['event_action'], dedupKey?: string): PagerDutyEvent[] {
    return this.events.filter(
      (e) => e.event_action === action && (dedupKey === undefined || e.dedup_key === dedupKey),
    );
  }

  async waitForEvent(
    action: PagerDutyEvent['event_action'],
    dedupKey: string,
    timeoutMs = 5_000,
  ): Promise<PagerDutyEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.eventsOf(action, dedupKey)[0];
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no PagerDuty ${action} for ${dedupKey}: ${JSON.stringify(this.events)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (req.method === 'POST' && url.pathname === '/v2/enqueue') {
        if (this.holdEvents) {
          this.held.push({ ...(JSON.parse(body) as Omit<PagerDutyEvent, 'at'>), at: Date.now() });
          return;
        }
        const status = this.failEvents.shift();
        if (status !== undefined) {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end('{"status":"error"}');
          return;
        }
        this.events.push({ ...(JSON.parse(body) as Omit<PagerDutyEvent, 'at'>), at: Date.now() });
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end('{"status":"success","message":"Event processed"}');
        return;
      }
      if (req.method === 'GET' && url.pathname === '/oncalls') {
        this.oncallRequests.push(url.search);
        if (typeof this.oncalls === 'number') {
          res.writeHead(this.oncalls, { 'content-type': 'application/json' });
          res.end('{"error":{"message":"failing"}}');
          return;
        }
        if (req.headers.authorization !== 'Token token=pdtoken0000000000000') {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end('{"error":{"message":"unauthorized"}}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ oncalls: this.oncalls }));
        return;
      }
      res.writeHead(404);
      res.end();
    });
  }
}
