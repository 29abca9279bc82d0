import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { isValidSlackRequest } from '@slack/bolt';
import { afterEach, expect, it, vi } from 'vitest';
import { encodeChoiceValue } from '../../../src/cards/ids.js';
import { BODY_LIMIT_BYTES, choicePressRoute, signedBySlack } from '../../../src/slack/choicePressRoute.js';
import { UnverifiedBytes } from '../../../src/slack/unverifiedBytes.js';
import { captureLogger } from '../../support/logCapture.js';
import { openRawRequest, type RawRequest, sendChunks, within } from '../../support/rawRequest.js';
import {
  blockActionsPayload,
  postEvent,
  postInteraction,
  postSigned,
  signRequest,
} from '../../support/slackRequests.js';
import { until } from '../../support/until.js';

// In HTTP mode a choice press is taken before Bolt's dispatch; everything else, and anything not
// signed right, reaches Bolt's receiver with its body intact.

const SECRET = 'route-signing-secret';

// Bolt's own check, watched: the route must decide by it, over the body it read.
vi.mock('@slack/bolt', async (importOriginal) => {
  const bolt = await importOriginal<typeof import('@slack/bolt')>();
  return { ...bolt, isValidSlackRequest: vi.fn(bolt.isValidSlackRequest) };
});

let server: Server | undefined;
afterEach(async () => {
  // A connection a test left open (a body that never ended) would hold close() for ever.
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

interface Seen {
  presses: Array<{ body: { actions: Array<{ action_id: string }> }; remember: boolean }>;
  /** What Bolt's receiver was handed: the request's body as read before it. */
  bolt: Array<{ method: string; url: string; rawBody: string | undefined }>;
}

async function start(
  pressFails = false,
  unverified?: UnverifiedBytes,
): Promise<{ base: string; seen: Seen; logs: unknown[] }> {
  const seen: Seen = { presses: [], bolt: [] };
  const { logger, lines } = captureLogger();
  server = createServer(
    choicePressRoute({
      signingSecret: SECRET,
      path: '/slack/events',
      press: async (body, ack, how) => {
        seen.presses.push({ body: body as Seen['presses'][number]['body'], remember: how.remember });
        if (pressFails) throw new Error('press blew up');
        await ack();
      },
      bolt: (req, res) => {
        const rawBody = (req as { rawBody?: Buffer }).rawBody?.toString();
        seen.bolt.push({ method: req.method!, url: req.url!, rawBody });
        res.writeHead(299);
        res.end();
      },
      logger,
      ...(unverified ? { unverified } : {}),
    }),
  );
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, seen, logs: lines };
}

function press(actionId: string) {
  return blockActionsPayload({
    userId: 'U0ALICE',
    channel: 'C0APPROVALS',
    ts: '1700000000.000100',
    actionId,
    value: encodeChoiceValue({ s: 0, c: 'allow_once' }),
    responseUrl: 'http://127.0.0.1:1/response',
  });
}

it('a signed press on a choice or remember button goes to the press handler, acknowledged with 200', async () => {
  const { base, seen } = await start();
  expect((await postInteraction(base, SECRET, press('cs_choice_0'))).status).toBe(200);
  expect((await postInteraction(base, SECRET, press('cs_remember_1'))).status).toBe(200);
  expect(seen.presses.map((p) => [p.body.actions[0]!.action_id, p.remember])).toEqual([
    ['cs_choice_0', false],
    ['cs_remember_1', true],
  ]);
  expect(seen.bolt).toEqual([]);
});

it('other interactions, events and other paths go to Bolt with the body already read', async () => {
  const { base, seen } = await start();
  const other = press('cs_view_full');
  expect((await postInteraction(base, SECRET, other)).status).toBe(299);
  expect((await postEvent(base, SECRET, { type: 'app_home_opened', user: 'U0ALICE' })).status).toBe(299);
  expect((await fetch(`${base}/healthz`)).status).toBe(299);

  expect(seen.presses).toEqual([]);
  expect(seen.bolt.map((b) => [b.method, b.url])).toEqual([
    ['POST', '/slack/events'],
    ['POST', '/slack/events'],
    ['GET', '/healthz'],
  ]);
  expect(seen.bolt[0]!.rawBody).toContain('cs_view_full');
  expect(seen.bolt[2]!.rawBody).toBeUndefined();
});

it('a request not signed right is answered 401 here, and never reaches Bolt', async () => {
  const { base, seen } = await start();
  // Signed with another secret.
  expect((await postInteraction(base, 'not-the-secret', press('cs_choice_0'))).status).toBe(401);
  // Signed five minutes and more ago.
  const stale = Math.floor(Date.now() / 1000) - 600;
  const stalePress = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  expect((await postSigned(base, SECRET, stalePress, undefined, { ts: stale })).status).toBe(401);
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

it('a hundred requests not signed right cost at most ten warn lines a minute, and one counting the rest', async () => {
  const { base, seen, logs } = await start();
  const body = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  const ahead = Math.floor(Date.now() / 1000) + 3_600;
  const unsigned = { 'content-type': 'application/x-www-form-urlencoded' };
  const statuses: number[] = [];
  for (let i = 0; i < 100; i += 1) {
    // Signed with another secret, not signed at all, signed an hour ahead: whoever reaches PORT
    // chooses how many.
    const sent = [
      () => postInteraction(base, 'not-the-secret', press('cs_choice_0')).then((r) => r.status),
      () => postRaw(base, '/slack/events', unsigned, body),
      () => postSigned(base, SECRET, body, undefined, { ts: ahead }).then((r) => r.status),
    ][i % 3]!;
    statuses.push(await sent());
  }
  const warnings = logs.filter((l) => (l as { level: number }).level === 40);
  expect(warnings.length).toBeGreaterThan(0);
  expect(warnings.length).toBeLessThanOrEqual(11);
  expect(statuses).toEqual(Array(100).fill(401));
  expect(seen.bolt).toEqual([]);
  expect(seen.presses).toEqual([]);
});

it('a path that is not a URL is answered 400, whatever the method, and never reaches Bolt', async () => {
  const { base, seen, logs } = await start();
  const body = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  const headers = signRequest(SECRET, body, Math.floor(Date.now() / 1000));
  for (const path of ['//', '///', '/\\']) {
    expect({ path, status: await postRaw(base, path, headers, body) }).toEqual({ path, status: 400 });
    expect({ path, status: await postRaw(base, path, {}, '', 'GET') }).toEqual({ path, status: 400 });
  }
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
  expect(logs).toEqual([]);
});

it('a signed JSON body sent again as a form is refused 400: the payload quoted in its text is no press', async () => {
  const { base, seen } = await start();
  // A real event Slack signed, whose text (a message, a view's title) quotes `&payload=<a press>`.
  const quoted = `hi&payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}&x=`;
  const event = JSON.stringify({
    token: 'x',
    team_id: 'T1',
    type: 'event_callback',
    event: { type: 'app_home_opened', user: 'U0BOB', view: { title: quoted } },
  });
  const headers = signRequest(SECRET, event, Math.floor(Date.now() / 1000), 'application/json');
  // As Slack sent it: an event, for Bolt.
  expect(await postRaw(base, '/slack/events', headers, event)).toBe(299);
  // The same signed bytes, labelled a form: read as one, they would carry the quoted press.
  const relabelled = { ...headers, 'content-type': 'application/x-www-form-urlencoded' };
  expect(await postRaw(base, '/slack/events', relabelled, event)).toBe(400);
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toHaveLength(1);
});

it('a press handler that fails before acknowledging is logged and answered 500', async () => {
  const { base, seen, logs } = await start(true);
  expect((await postInteraction(base, SECRET, press('cs_choice_0'))).status).toBe(500);
  expect(seen.presses).toHaveLength(1);
  expect(logs).toContainEqual(expect.objectContaining({ level: 50, msg: 'slack listener failed' }));
});

it('refuses a request signed more than five minutes ahead of this clock, whatever it carries', async () => {
  const { base, seen, logs } = await start();
  const ahead = Math.floor(Date.now() / 1000) + 3_600;
  const body = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  expect((await postSigned(base, SECRET, body, undefined, { ts: ahead })).status).toBe(401);
  expect(
    (await postEvent(base, SECRET, { type: 'app_home_opened', user: 'U0ALICE' }, { ts: ahead })).status,
  ).toBe(401);
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
  expect(JSON.stringify(logs)).toContain('ahead of this clock');
  // A clock a minute behind Slack's is within the window: the press is taken.
  const soon = Math.floor(Date.now() / 1000) + 60;
  expect((await postSigned(base, SECRET, body, undefined, { ts: soon })).status).toBe(200);
  expect(seen.presses).toHaveLength(1);
});

it('refuses it on every spelling of the path that Bolt reads as its own', async () => {
  const { base, seen } = await start();
  const ahead = Math.floor(Date.now() / 1000) + 3_600;
  const body = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  const headers = signRequest(SECRET, body, ahead);
  // fetch would tidy these paths before sending them; Bolt tidies them as it reads them.
  for (const path of ['/slack/./events', '/slack/%2e/events', '/x/../slack/events', `${base}/slack/events`]) {
    expect({ path, status: await postRaw(base, path, headers, body) }).toEqual({ path, status: 401 });
  }
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

it('checks the signature as Slack makes it: the secret, the body and a timestamp at most five minutes old', () => {
  const body = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  const now = Date.now();
  const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  const signed = (secret: string, ts: number, signedBody = body) =>
    request(signRequest(secret, signedBody, ts));
  const ts = Math.floor(now / 1000);
  expect(signedBySlack(SECRET, signed(SECRET, ts), body, now)).toBe(true);
  expect(signedBySlack(SECRET, signed(SECRET, ts - 299), body, now)).toBe(true);
  expect(signedBySlack(SECRET, signed(SECRET, ts - 301), body, now)).toBe(false);
  expect(signedBySlack(SECRET, signed('another-secret', ts), body, now)).toBe(false);
  expect(signedBySlack(SECRET, signed(SECRET, ts, 'payload=%7B%7D'), body, now)).toBe(false);
  const { 'x-slack-signature': _dropped, ...unsigned } = signRequest(SECRET, body, ts);
  expect(signedBySlack(SECRET, request(unsigned), body, now)).toBe(false);
  const withOddTimestamp = {
    ...signRequest(SECRET, body, ts),
    'x-slack-request-timestamp': 'soon',
  };
  expect(signedBySlack(SECRET, request(withOddTimestamp), body, now)).toBe(false);
});

it('a body past 3 MB is answered 413, while a press as large as a full "View full" is taken', async () => {
  const { base, seen } = await start();
  // A press in "View full" brings the modal back whole: 100 blocks of shell text, as Slack sends it.
  const fullView = {
    ...press('cs_choice_0'),
    view: { blocks: 'cp -r /srv/app/"a b"/*.yml /etc/\n'.repeat(9_000) },
  };
  const large = `payload=${encodeURIComponent(JSON.stringify(fullView).replaceAll('/', '\\/'))}`;
  expect(large.length).toBeGreaterThan(500 * 1024);
  expect((await postSigned(base, SECRET, large)).status).toBe(200);
  expect(seen.presses).toHaveLength(1);
  // The worst Slack can send: the same modal full of non-ASCII text, each character escaped as
  // `\uXXXX` and form-encoded (8 bytes). A press there decides as any other.
  const wide = { ...press('cs_choice_0'), view: { blocks: '部署'.repeat(150_000) } };
  const escaped = JSON.stringify(wide).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16)}`,
  );
  const widest = `payload=${encodeURIComponent(escaped)}`;
  expect(widest.length).toBeGreaterThan(2_300_000);
  expect((await postSigned(base, SECRET, widest)).status).toBe(200);
  expect(seen.presses).toHaveLength(2);
  const tooLarge = `payload=${'x'.repeat(BODY_LIMIT_BYTES - 'payload='.length + 1)}`;
  expect((await postSigned(base, SECRET, tooLarge)).status).toBe(413);
  expect(seen.presses).toHaveLength(2);
  expect(seen.bolt).toEqual([]);
});

it('a body larger than the limit is answered 413, and reaches neither the handler nor Bolt', async () => {
  const { base, seen } = await start();
  const huge = `payload=${'x'.repeat(BODY_LIMIT_BYTES + 1)}`;
  expect((await postSigned(base, SECRET, huge)).status).toBe(413);
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

it('verifies with Bolt’s isValidSlackRequest over the body as read, and takes a press only when it says so', async () => {
  const { base, seen } = await start();
  const verify = vi.mocked(isValidSlackRequest);
  verify.mockClear();
  const body = `payload=${encodeURIComponent(JSON.stringify(press('cs_choice_0')))}`;
  expect((await postSigned(base, SECRET, body)).status).toBe(200);
  expect(verify).toHaveBeenCalledTimes(1);
  expect(verify.mock.calls[0]![0]).toMatchObject({
    signingSecret: SECRET,
    body,
    headers: { 'x-slack-signature': expect.stringMatching(/^v0=[0-9a-f]{64}$/) },
  });
  expect(verify.mock.results[0]).toEqual({ type: 'return', value: true });
  // The same press, rightly signed, when Bolt's check says no: refused, to neither the handler nor Bolt.
  verify.mockReturnValueOnce(false);
  expect((await postSigned(base, SECRET, body)).status).toBe(401);
  expect(seen.presses).toHaveLength(1);
  expect(seen.bolt).toEqual([]);
});

it('a body past the limit with no declared length is answered 413 at once: read no further, its connection closed', async () => {
  const { base, seen } = await start();
  const connections: Socket[] = [];
  server!.on('connection', (socket) => connections.push(socket));
  const request = await openRawRequest(`${base}/slack/events`, 'POST', {
    ...lookingSigned(),
    'transfer-encoding': 'chunked',
  });
  // Past the limit, and on: the body never ends of itself.
  const endless = BODY_LIMIT_BYTES + 256 * 1024 * 1024;
  const sending = sendChunks(request, endless);
  expect(await within(request.statusLine, 5_000, 'the answer')).toBe('HTTP/1.1 413 Payload Too Large');
  // Not reset the moment the answer is written, with the body unread: a sender still writing
  // could lose the answer itself. The connection lingers half open a while, reading nothing.
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(connections[0]!.destroyed).toBe(false);
  await within(request.closed, 5_000, 'the server closing the connection');
  const sent = await sending;
  expect(sent).toBeGreaterThan(BODY_LIMIT_BYTES);
  expect(sent).toBeLessThan(endless);
  // The server read the limit and what was on its way when it stopped, not what followed.
  expect(connections).toHaveLength(1);
  expect(connections[0]!.bytesRead).toBeLessThan(BODY_LIMIT_BYTES + 1024 * 1024);
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

it('a body declared past the limit is answered 413 before any of it is sent, and its connection closed', async () => {
  const { base, seen } = await start();
  const request = await openRawRequest(`${base}/slack/events`, 'POST', {
    ...lookingSigned(),
    'content-length': String(BODY_LIMIT_BYTES + 1),
  });
  expect(await within(request.statusLine, 5_000, 'the answer')).toBe('HTTP/1.1 413 Payload Too Large');
  await within(request.closed, 5_000, 'the server closing the connection');
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

it('bodies held before their signature is checked share one cap: past it, 503 at once with a Retry-After, the connection closed', async () => {
  const unverified = new UnverifiedBytes();
  // The most ever held, watched at every byte taken.
  let peak = 0;
  const take = unverified.take.bind(unverified);
  unverified.take = (bytes) => {
    const taken = take(bytes);
    peak = Math.max(peak, unverified.held);
    return taken;
  };
  const { base, seen } = await start(false, unverified);
  const partial = BODY_LIMIT_BYTES - 1;
  const fitting = Math.floor(unverified.limit / partial);
  expect(fitting).toBeLessThan(12);
  // A stranger's bodies, each all but its last byte, held open: those that fit are held whole.
  const held: RawRequest[] = [];
  for (let i = 0; i < fitting; i += 1) {
    held.push(await sendAllButLastByte(base));
    await until(() => unverified.held === (i + 1) * partial);
  }
  // The rest pass the cap: answered 503 at once, not left to the 15 s request deadline.
  for (let i = fitting; i < 12; i += 1) {
    const refused = await sendAllButLastByte(base);
    expect(await within(refused.statusLine, 5_000, 'the answer')).toBe('HTTP/1.1 503 Service Unavailable');
    await within(refused.closed, 5_000, 'the server closing the connection');
    expect(unverified.held).toBe(fitting * partial);
  }
  // A genuine press that does not fit either waits for another try.
  const wide = {
    ...press('cs_choice_0'),
    view: { blocks: 'x'.repeat(unverified.limit - fitting * partial) },
  };
  const refused = await postInteraction(base, SECRET, wide);
  expect(refused.status).toBe(503);
  // Told when to try again, as a 503 that may pass should be; the wait is short (room frees fast).
  expect(refused.headers.get('retry-after')).toBe('1');
  // Senders giving up release what they held: the same press is then taken.
  held.shift()!.socket.destroy();
  await until(() => unverified.held === (fitting - 1) * partial);
  expect((await postInteraction(base, SECRET, wide)).status).toBe(200);
  expect(seen.presses).toHaveLength(1);
  for (const request of held) request.socket.destroy();
  await until(() => unverified.held === 0);
  expect(peak).toBeLessThanOrEqual(unverified.limit);
  expect(seen.bolt).toEqual([]);
});

it('a POST without the signature headers, or with a timestamp five minutes off, is answered 401 before its body is read', async () => {
  const unverified = new UnverifiedBytes();
  const { base, seen } = await start(false, unverified);
  const now = Math.floor(Date.now() / 1000);
  const cases: Record<string, Record<string, string>> = {
    'no signature headers': { 'content-type': 'application/x-www-form-urlencoded' },
    'no timestamp': { ...lookingSigned(), 'x-slack-request-timestamp': '' },
    'no signature': { ...lookingSigned(), 'x-slack-signature': '' },
    'a timestamp that is no number': { ...lookingSigned(), 'x-slack-request-timestamp': 'soon' },
    'a timestamp ten minutes old': { ...lookingSigned(), 'x-slack-request-timestamp': String(now - 600) },
    'a timestamp ten minutes ahead': { ...lookingSigned(), 'x-slack-request-timestamp': String(now + 600) },
  };
  for (const [how, headers] of Object.entries(cases)) {
    const present = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ''));
    const request = await openRawRequest(`${base}/slack/events`, 'POST', {
      ...present,
      'content-length': String(BODY_LIMIT_BYTES),
    });
    // Part of the body, then nothing: the answer must not wait for the rest.
    request.socket.write(Buffer.alloc(1024 * 1024, 'a'));
    expect({ how, status: await within(request.statusLine, 3_000, how) }).toEqual({
      how,
      status: 'HTTP/1.1 401 Unauthorized',
    });
    expect({ how, held: unverified.held }).toEqual({ how, held: 0 });
    request.socket.destroy();
  }
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

it('a body that stalls after its headers is answered 408 within a few seconds, and what it held released', async () => {
  const unverified = new UnverifiedBytes();
  const { base, seen } = await start(false, unverified);
  const started = Date.now();
  const request = await openRawRequest(`${base}/slack/events`, 'POST', {
    ...lookingSigned(),
    'content-length': String(BODY_LIMIT_BYTES),
  });
  request.socket.write(Buffer.alloc(1024 * 1024, 'a'));
  await until(() => unverified.held === 1024 * 1024);
  expect(await within(request.statusLine, 4_500, 'the answer')).toBe('HTTP/1.1 408 Request Timeout');
  expect(Date.now() - started).toBeLessThan(4_500);
  expect(unverified.held).toBe(0);
  await within(request.closed, 5_000, 'the server closing the connection');
  expect(seen.presses).toEqual([]);
  expect(seen.bolt).toEqual([]);
});

/**
 * A POST to the events path declaring BODY_LIMIT_BYTES, sent all but its last byte. Its headers
 * look signed (a timestamp of now, a signature of the right shape): only the body can tell.
 */
async function sendAllButLastByte(base: string): Promise<RawRequest> {
  const request = await openRawRequest(`${base}/slack/events`, 'POST', {
    ...lookingSigned(),
    'content-length': String(BODY_LIMIT_BYTES),
  });
  request.socket.write(Buffer.alloc(BODY_LIMIT_BYTES - 1, 'a'));
  return request;
}

/** Headers that pass for Slack's until the body is read: a timestamp of now, a signature of nothing. */
function lookingSigned(): Record<string, string> {
  return {
    'content-type': 'application/x-www-form-urlencoded',
    'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)),
    'x-slack-signature': `v0=${'0'.repeat(64)}`,
  };
}

/** A request (a POST unless told) whose request line carries `path` exactly as given; resolves with the status. */
function postRaw(
  base: string,
  path: string,
  headers: Record<string, string>,
  body: string,
  method = 'POST',
): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method,
        path,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode!);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
