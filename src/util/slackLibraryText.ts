// Slack's libraries (Bolt, its Socket Mode client, the Web API client) log whole messages as text
// at debug. Those carry capabilities that neither redaction by key nor the list of configured
// secrets can see: a payload's response_url (posts to the channel for 30 minutes) and trigger_id
// (opens a modal), the legacy verification token, a call's trigger_id, and the Socket Mode URL's
// ticket (opens a connection as the app). What is left of such a line is decided here.

import { REDACTED } from './redacted.js';

/** A Slack library's line as the bot writes it: its text, and what it keeps of a message. */
export interface SlackLine {
  msg: string;
  fields?: Record<string, unknown>;
}

type Keep = (body: string) => Record<string, unknown> | undefined;

function parsed(body: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The entries of `fields` that are strings or booleans: names and outcomes, never a body. */
function scalars(fields: Record<string, unknown>): Record<string, unknown> | undefined {
  const kept = Object.entries(fields).filter(
    ([, value]) => typeof value === 'string' || typeof value === 'boolean',
  );
  return kept.length ? Object.fromEntries(kept) : undefined;
}

/** A Socket Mode envelope: its type and its payload's (and event's) type. */
const envelopeTypes: Keep = (body) => {
  const envelope = parsed(body);
  const payload = envelope?.payload as Record<string, unknown> | undefined;
  const event = payload?.event as Record<string, unknown> | undefined;
  return scalars({ type: envelope?.type, payloadType: payload?.type, eventType: event?.type });
};

/** A Web API answer: whether it succeeded, and Slack's error code if not. */
const outcome: Keep = (body) => {
  const answer = parsed(body);
  return scalars({ ok: answer?.ok, error: answer?.error });
};

const nothing: Keep = () => undefined;

/**
 * Lines that quote a whole message, by the text they start with: the message is dropped and the
 * rest kept. The Web API client's `http request url` line before a body names the method.
 */
const WHOLE_MESSAGES: ReadonlyArray<readonly [prefix: string, keep: Keep]> = [
  ['Received a message on the WebSocket: ', envelopeTypes],
  ['Unable to parse an incoming WebSocket message (will ignore): ', nothing],
  ['http request body: ', nothing],
  ['http request result: ', outcome],
];

// The backstop for every other line (an ack's body, an error that quotes a request): the value
// goes, what it was stays readable. Also in JSON's escaped form (`hooks.slack.com\/actions\/…`,
// a payload quoted inside a string). Every alternative starts with literal characters and every
// repeat is bounded, as the secret rules' are (src/secrets/secretRules.ts has the webhook one).
const CAPABILITIES = new RegExp(
  [
    String.raw`(?<hook>hooks\.slack\.com\\?/(?:actions|commands|services|workflows|triggers)\\?/)(?:\\/|[A-Za-z0-9_/-]){1,250}`,
    String.raw`(?<key>\\?"(?:[a-z_]{0,40}token|trigger_id|response_url|interactivity_pointer)\\?"[ \t]{0,8}:[ \t]{0,8}\\?")(?:\\/|[^"\\]){1,4096}`,
    String.raw`(?<ticket>[?&]ticket=)[^&\s"'\\]{1,1024}`,
  ].join('|'),
  'g',
);

/** `text` with every response_url, webhook, trigger_id, token value and Socket Mode ticket hidden. */
export function maskSlackCapabilities(text: string): string {
  return text.replace(
    CAPABILITIES,
    (_match, hook?: string, key?: string, ticket?: string) => `${hook ?? key ?? ticket}${REDACTED}`,
  );
}

/** What the bot writes of a Slack library's text. */
export function slackLine(text: string): SlackLine {
  for (const [prefix, keep] of WHOLE_MESSAGES) {
    if (!text.startsWith(prefix)) continue;
    const fields = keep(text.slice(prefix.length));
    return { msg: prefix.slice(0, -2), ...(fields ? { fields } : {}) };
  }
  return { msg: maskSlackCapabilities(text) };
}

/**
 * An error a Slack library logs, with its message and stack masked: a copy of the same class
 * (type and fields written as before), or the error itself when nothing in it is hidden.
 */
export function maskSlackError(err: Error): Error {
  const message = maskSlackCapabilities(err.message);
  const stack = err.stack === undefined ? undefined : maskSlackCapabilities(err.stack);
  if (message === err.message && stack === err.stack) return err;
  return Object.assign(Object.create(Object.getPrototypeOf(err)) as Error, err, { message, stack });
}
