// The click floor: what any bot must do for one click and nothing more. It verifies the Slack
// signature, claims the stage in Redis and writes one approval/decide frame to the host's stdin.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { Redis } from 'ioredis';
import { announceReady, handshakeDone, spawnHost } from './common.mjs';

const secret = process.env.SLACK_SIGNING_SECRET;
const redis = new Redis(process.env.REDIS_URL);
let nextId = 1;

let pending = 2;
const readyPart = () => {
  pending -= 1;
  if (pending === 0) announceReady();
};
const { write } = spawnHost((_line, msg) => {
  handshakeDone(msg, write, readyPart);
});

function verified(req, body) {
  const ts = req.headers['x-slack-request-timestamp'];
  const given = Buffer.from(String(req.headers['x-slack-signature'] ?? ''));
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const expected = Buffer.from(`v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

http
  .createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', async () => {
      if (!verified(req, body)) {
        res.writeHead(401).end();
        return;
      }
      res.writeHead(200).end();
      const payload = JSON.parse(new URLSearchParams(body).get('payload'));
      const approvalId = payload.bench_approval_id;
      const value = JSON.parse(payload.actions[0].value);
      const commandId = randomUUID();
      const claimed = await redis.set(`floor:claim:{${approvalId}}:${value.s}`, commandId, 'NX');
      if (claimed !== 'OK') return;
      write({
        jsonrpc: '2.0',
        id: nextId++,
        method: 'approval/decide',
        params: {
          sessionId: payload.bench_session_id,
          approvalId,
          commandId,
          requirementId: { approvalId, sourceIndex: value.s },
          choiceId: value.c,
        },
      });
    });
  })
  .listen(Number(process.env.PORT), '127.0.0.1', readyPart);
