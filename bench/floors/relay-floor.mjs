// The relay floor: what any relay must do for one approval and nothing more. It parses the host's
// frame, makes one Redis write and posts one message, one post at a time per channel as the bot
// must. The message is a naive card (the tool, the reason and the arguments as they came, plus
// two buttons), so that the floor sends about as many bytes as the bot's card. FLOOR_MODE=webclient posts with the Web API client configured exactly as the bot configures
// it; FLOOR_MODE=raw posts with plain node:http and a keep-alive agent, to show what the client
// library itself costs.
import http from 'node:http';
import { Redis } from 'ioredis';
import { createWebClient } from '../../dist/slack/webClient.js';
import { handshakeDone, keyedQueue, spawnHost } from './common.mjs';

const routes = JSON.parse(process.env.FLOOR_ROUTES);
const token = process.env.SLACK_BOT_TOKEN;
const apiUrl = process.env.SLACK_API_URL;
const redis = new Redis(process.env.REDIS_URL);
const inChannelOrder = keyedQueue();

function naiveCard(params) {
  const text = `${params.toolName} ${params.approvalId}`;
  const blocks = [
    { type: 'header', text: { type: 'plain_text', text: `Approve ${params.toolName}?` } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: `${params.reason ?? ''}\n\`\`\`${JSON.stringify(params.subject)}\`\`\`` },
    },
    { type: 'section', text: { type: 'mrkdwn', text: `\`\`\`${params.rawArgs}\`\`\`` } },
    {
      type: 'actions',
      elements: params.availableChoices.map((c, i) => ({
        type: 'button',
        action_id: `choice_${i}`,
        text: { type: 'plain_text', text: c.label },
        value: c.choiceId,
      })),
    },
    {
      type: 'context',
      elements: [{ type: 'mrkdwn', text: `Approval ${params.approvalId} · session ${params.sessionId}` }],
    },
  ];
  return { text, blocks };
}

function webClientPoster() {
  const client = createWebClient({ token, apiUrl });
  return (channel, card) => client.chat.postMessage({ channel, ...card });
}

function rawPoster() {
  const agent = new http.Agent({ keepAlive: true });
  const url = new URL('chat.postMessage', apiUrl);
  return (channel, card) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({ channel, ...card });
      const req = http.request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json; charset=utf-8',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (c) => {
            data += c;
          });
          res.on('end', () => {
            const parsed = JSON.parse(data);
            if (parsed.ok) resolve(parsed);
            else reject(new Error(parsed.error));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

const post = process.env.FLOOR_MODE === 'raw' ? rawPoster() : webClientPoster();

const { write } = spawnHost((line, msg) => {
  if (handshakeDone(msg, write)) return;
  if (msg.method !== 'approval/requested') return;
  const { approvalId, toolName } = msg.params;
  const channel = routes[toolName] ?? Object.values(routes)[0];
  const card = naiveCard(msg.params);
  const stored = redis.set(`floor:{${approvalId}}`, line);
  inChannelOrder(channel, async () => {
    await stored;
    await post(channel, card);
  }).catch((err) => process.stderr.write(`relay floor: ${err.message}\n`));
});
