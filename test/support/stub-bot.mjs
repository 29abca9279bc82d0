// A stand-in for dist/main.js used only by bot.test.ts: proves startBot's wiring (env, logs,
// /readyz, /metrics, signals) and the fake host spawn path without the real bot.
import { spawn } from 'node:child_process';
import http from 'node:http';

const log = (level, msg, extra = {}) =>
  process.stdout.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, msg, ...extra })}\n`);

let ready = false;
const host = spawn('/bin/sh', ['-c', process.env.MSP_HOST_COMMAND], { stdio: ['pipe', 'pipe', 'inherit'] });
let buf = '';
host.stdout.setEncoding('utf8');
host.stdout.on('data', (chunk) => {
  buf += chunk;
  let nl = buf.indexOf('\n');
  while (nl >= 0) {
    const frame = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    nl = buf.indexOf('\n');
    if (frame.id === 1 && frame.result) {
      host.stdin.write('{"jsonrpc":"2.0","method":"initialized"}\n');
      ready = true;
      log(30, 'host ready', { durability: frame.result.sessionDurability });
    } else if (frame.method) {
      log(20, 'host frame', { method: frame.method });
    }
  }
});
host.stdin.write(
  `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'stub', version: '0' } } })}\n`,
);

// /metrics on METRICS_PORT alone, as the bot serves it.
const metricsServer = http.createServer((req, res) => {
  if (req.url !== '/metrics') return res.writeHead(404).end();
  res.end(`countersign_up{part="host"} ${ready ? 1 : 0}\n`);
});
if (process.env.METRICS_PORT) metricsServer.listen(Number(process.env.METRICS_PORT), '127.0.0.1');
const server = http.createServer((req, res) => {
  if (req.url !== '/readyz') return res.writeHead(404).end();
  res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ ready }));
});
server.listen(Number(process.env.PORT), '127.0.0.1', () =>
  log(30, 'listening', {
    env: {
      token: process.env.SLACK_BOT_TOKEN,
      appToken: process.env.SLACK_APP_TOKEN ?? null,
      apiUrl: process.env.SLACK_API_URL,
      redis: process.env.REDIS_URL,
      channel: process.env.SLACK_CHANNEL,
      level: process.env.LOG_LEVEL,
      extra: process.env.EXTRA ?? null,
    },
  }),
);
process.stderr.write('plain stderr line\n');
process.on('SIGTERM', () => {
  log(30, 'stopping');
  host.stdin.end();
  metricsServer.close();
  server.close(() => process.exit(0));
});
