// Signed requests as Slack sends them to the bot's POST /slack/events (slack-platform.md §3).

import { createHmac } from 'node:crypto';

export interface SignedHeaders {
  'content-type': string;
  'x-slack-request-timestamp': string;
  'x-slack-signature': string;
  [header: string]: string;
}

/**
 * v0 signature headers for `rawBody`. The content type is exactly
 * `application/x-www-form-urlencoded` (Bolt answers 400 to `...; charset=utf-8`).
 */
export function signRequest(
  secret: string,
  rawBody: string,
  ts: number = Math.floor(Date.now() / 1000),
  contentType = 'application/x-www-form-urlencoded',
): SignedHeaders {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${ts}:${rawBody}`).digest('hex')}`;
  return {
    'content-type': contentType,
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': signature,
  };
}

function eventsUrl(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith('/slack/events') ? trimmed : `${trimmed}/slack/events`;
}

export interface PostOptions {
  /** Override the signing timestamp (unix seconds), e.g. to send a stale request. */
  ts?: number;
  /** Extra headers, e.g. x-slack-retry-num. */
  headers?: Record<string, string>;
}

/** Posts a raw body to the bot's events endpoint, signed. */
export function postSigned(
  baseUrl: string,
  secret: string,
  rawBody: string,
  contentType = 'application/x-www-form-urlencoded',
  opts: PostOptions = {},
): Promise<Response> {
  const headers = { ...signRequest(secret, rawBody, opts.ts, contentType), ...(opts.headers ?? {}) };
  return fetch(eventsUrl(baseUrl), { method: 'POST', headers, body: rawBody });
}

/**
 * Posts `rawBody` to the bot's events endpoint with exactly `headers` and no signing of its own:
 * for requests Slack did not sign as they are (a forged or stale signature, a missing header).
 */
export function postWithHeaders(
  baseUrl: string,
  rawBody: string,
  headers: Record<string, string>,
): Promise<Response> {
  return fetch(eventsUrl(baseUrl), { method: 'POST', headers, body: rawBody });
}

/** The form body Slack sends an interactive payload in: `payload=<url-encoded JSON>`. */
export function interactionBody(payload: unknown): string {
  return `payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

/**
 * Posts an interactive payload (block_actions, view_submission, ...) the way Slack does:
 * form body `payload=<url-encoded JSON>`. `baseUrl` is the bot's URL (with or without /slack/events).
 */
export function postInteraction(
  baseUrl: string,
  secret: string,
  payload: unknown,
  opts: PostOptions = {},
): Promise<Response> {
  return postSigned(baseUrl, secret, interactionBody(payload), 'application/x-www-form-urlencoded', opts);
}

/** Posts a slash command (plain form fields, not wrapped in payload=). */
export function postSlashCommand(
  baseUrl: string,
  secret: string,
  fields: Record<string, string>,
  opts: PostOptions = {},
): Promise<Response> {
  return postSigned(baseUrl, secret, slashCommandBody(fields), 'application/x-www-form-urlencoded', opts);
}

/** Posts an Events API callback (JSON body), e.g. app_home_opened. */
export function postEvent(
  baseUrl: string,
  secret: string,
  event: Record<string, unknown>,
  opts: PostOptions = {},
): Promise<Response> {
  const body = JSON.stringify({
    token: 'legacy-verification-token',
    team_id: 'T1',
    api_app_id: 'A_TEST',
    type: 'event_callback',
    event_id: `Ev${Date.now()}${Math.floor(Math.random() * 1e6)}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: 'T1', user_id: 'U_BOT', is_bot: true }],
    event,
  });
  return postSigned(baseUrl, secret, body, 'application/json', opts);
}

let actionCounter = 0;
function actionTs(): string {
  actionCounter += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(actionCounter).padStart(6, '0')}`;
}

export interface BlockActionsInput {
  userId: string;
  channel: string;
  /** ts of the message holding the button (the card). */
  ts: string;
  actionId: string;
  value: string;
  blockId?: string;
  responseUrl: string;
  triggerId?: string;
  userName?: string;
  teamId?: string;
  /** The message as the clicker saw it; defaults to an empty bot message. */
  messageText?: string;
  messageBlocks?: unknown[];
  buttonText?: string;
  ephemeral?: boolean;
}

/** A block_actions payload for a button click on a message (slack-platform.md §3.1). */
export function blockActionsPayload(input: BlockActionsInput): Record<string, unknown> {
  const teamId = input.teamId ?? 'T1';
  const name = input.userName ?? input.userId.toLowerCase();
  return {
    type: 'block_actions',
    api_app_id: 'A_TEST',
    token: 'legacy-verification-token',
    trigger_id: input.triggerId ?? `${Date.now()}.1234.${input.userId.toLowerCase()}`,
    team: { id: teamId, domain: 'test' },
    enterprise: null,
    is_enterprise_install: false,
    user: { id: input.userId, username: name, name, team_id: teamId },
    container: {
      type: 'message',
      message_ts: input.ts,
      channel_id: input.channel,
      is_ephemeral: input.ephemeral ?? false,
    },
    channel: { id: input.channel, name: 'approvals' },
    message: {
      type: 'message',
      ts: input.ts,
      bot_id: 'B_BOT',
      user: 'U_BOT',
      text: input.messageText ?? '',
      blocks: input.messageBlocks ?? [],
    },
    state: { values: {} },
    response_url: input.responseUrl,
    actions: [
      {
        type: 'button',
        action_id: input.actionId,
        block_id: input.blockId ?? 'actions',
        value: input.value,
        text: { type: 'plain_text', text: input.buttonText ?? input.actionId, emoji: true },
        action_ts: actionTs(),
      },
    ],
  };
}

export interface ViewBlockActionsInput {
  userId: string;
  /** The modal the button is in, as views.open answered: its id, callback_id and private_metadata. */
  viewId: string;
  callbackId: string;
  privateMetadata: string;
  actionId: string;
  value: string;
  blockId?: string;
  triggerId?: string;
  teamId?: string;
}

/**
 * A block_actions payload for a button pressed inside a modal (slack-platform.md §3.1): the
 * container is the view, and there is no channel, message or response_url.
 */
export function viewBlockActionsPayload(input: ViewBlockActionsInput): Record<string, unknown> {
  const teamId = input.teamId ?? 'T1';
  const name = input.userId.toLowerCase();
  return {
    type: 'block_actions',
    api_app_id: 'A_TEST',
    token: 'legacy-verification-token',
    trigger_id: input.triggerId ?? `${Date.now()}.4321.${name}`,
    team: { id: teamId, domain: 'test' },
    enterprise: null,
    is_enterprise_install: false,
    user: { id: input.userId, username: name, name, team_id: teamId },
    container: { type: 'view', view_id: input.viewId },
    view: {
      id: input.viewId,
      team_id: teamId,
      type: 'modal',
      callback_id: input.callbackId,
      private_metadata: input.privateMetadata,
      hash: 'h1',
      root_view_id: input.viewId,
      previous_view_id: null,
      app_id: 'A_TEST',
      bot_id: 'B_BOT',
      title: { type: 'plain_text', text: 'Full request' },
      blocks: [],
      state: { values: {} },
    },
    actions: [
      {
        type: 'button',
        action_id: input.actionId,
        block_id: input.blockId ?? 'actions',
        value: input.value,
        text: { type: 'plain_text', text: input.actionId, emoji: true },
        action_ts: actionTs(),
      },
    ],
  };
}

export interface ViewSubmissionInput {
  userId: string;
  callbackId: string;
  privateMetadata: string;
  /** state.values: block_id -> action_id -> {type, value | selected_option | ...}. */
  values: Record<string, Record<string, Record<string, unknown>>>;
  viewId?: string;
  /** A modal pushed on top of another (views.push): the view under it, and the first of the stack. */
  previousViewId?: string;
  rootViewId?: string;
  hash?: string;
  teamId?: string;
  userName?: string;
  triggerId?: string;
  responseUrls?: Array<{ block_id: string; action_id: string; channel_id: string; response_url: string }>;
}

/** A view_submission payload (slack-platform.md §3.2). */
export function viewSubmissionPayload(input: ViewSubmissionInput): Record<string, unknown> {
  const teamId = input.teamId ?? 'T1';
  const name = input.userName ?? input.userId.toLowerCase();
  const viewId = input.viewId ?? 'V000001';
  return {
    type: 'view_submission',
    api_app_id: 'A_TEST',
    token: 'legacy-verification-token',
    trigger_id: input.triggerId ?? `${Date.now()}.5678.${input.userId.toLowerCase()}`,
    team: { id: teamId, domain: 'test' },
    enterprise: null,
    is_enterprise_install: false,
    user: { id: input.userId, username: name, name, team_id: teamId },
    view: {
      id: viewId,
      team_id: teamId,
      type: 'modal',
      callback_id: input.callbackId,
      private_metadata: input.privateMetadata,
      hash: input.hash ?? 'h1',
      root_view_id: input.rootViewId ?? input.previousViewId ?? viewId,
      previous_view_id: input.previousViewId ?? null,
      app_id: 'A_TEST',
      bot_id: 'B_BOT',
      title: { type: 'plain_text', text: 'Countersign' },
      blocks: [],
      state: { values: input.values },
    },
    response_urls: input.responseUrls ?? [],
  };
}

export interface SlashCommandInput {
  command?: string;
  text?: string;
  userId?: string;
  userName?: string;
  channelId?: string;
  channelName?: string;
  responseUrl?: string;
  triggerId?: string;
  teamId?: string;
}

/** The form-encoded body of a slash command (slack-platform.md §3.3). Unknown keys pass through. */
export function slashCommandBody(input: SlashCommandInput | Record<string, string>): string {
  const i = input as SlashCommandInput & Record<string, string>;
  const fields: Record<string, string> = {
    token: 'legacy-verification-token',
    team_id: i.teamId ?? i.team_id ?? 'T1',
    team_domain: 'test',
    channel_id: i.channelId ?? i.channel_id ?? 'C0APPROVALS',
    channel_name: i.channelName ?? i.channel_name ?? 'approvals',
    user_id: i.userId ?? i.user_id ?? 'U_ALICE',
    user_name: i.userName ?? i.user_name ?? 'alice',
    command: i.command ?? '/countersign',
    text: i.text ?? '',
    response_url: i.responseUrl ?? i.response_url ?? 'http://127.0.0.1:9/response/none',
    trigger_id: i.triggerId ?? i.trigger_id ?? `${Date.now()}.9999.cmd`,
    api_app_id: 'A_TEST',
    is_enterprise_install: 'false',
  };
  const camel = new Set([
    'command',
    'text',
    'userId',
    'userName',
    'channelId',
    'channelName',
    'responseUrl',
    'triggerId',
    'teamId',
  ]);
  for (const [k, v] of Object.entries(i)) {
    if (!camel.has(k) && typeof v === 'string') fields[k] = v;
  }
  return new URLSearchParams(fields).toString();
}
