// The Slack settings: tokens, the mode they imply (Socket Mode with an app token, else HTTP),
// the Web API, and the default channel for cards.

import { z } from 'zod';
import type { Route } from '../../domain/route.js';
import { CHANNEL_ID, ConfigError, shown } from '../common.js';
import { DEFAULTS } from '../defaults.js';
import { check, durationVar, read, required, secretVar, urlVar } from './read.js';

export interface SlackConfig {
  botToken: string;
  appToken?: string;
  signingSecret?: string;
  /** Web API base URL, always ending in `/`. */
  apiUrl: string;
  /** How long one Web API call may take before its answer counts as lost. */
  apiTimeoutMs: number;
  /** Default channel for cards: SLACK_CHANNEL, else the channel of the file's catch-all route. */
  channel: string;
  mode: 'socket' | 'http';
}

/** A channel ID (public C…, private G…) or a #name, which chat.postMessage also accepts. */
const channel = z.string().regex(CHANNEL_ID);

const BOT_TOKEN_FIX =
  "paste the Bot User OAuth Token (xoxb-…) from your Slack app's OAuth & Permissions page";
const APP_TOKEN_FIX =
  "paste an app-level token (xapp-…) with the connections:write scope from your Slack app's Basic Information page, or unset it to use HTTP mode";
const SIGNING_SECRET_FIX = "paste the Signing Secret from your Slack app's Basic Information page";

function requiredInHttpMode(env: NodeJS.ProcessEnv, name: string): string {
  const value = secretVar(env, name, SIGNING_SECRET_FIX);
  if (value === undefined) {
    throw new ConfigError(
      name,
      `${name} is required in HTTP mode (SLACK_APP_TOKEN is unset): copy the Signing Secret from your Slack app's Basic Information page, or set SLACK_APP_TOKEN (xapp-…) to use Socket Mode`,
    );
  }
  return value;
}

/**
 * SLACK_API_URL. The client appends each method name to it, so after a query or a fragment
 * (`…/api?x=1/chat.postMessage`) the name lands in them and every call asks the wrong address.
 */
function apiUrlVar(env: NodeJS.ProcessEnv): string {
  const apiUrl = urlVar(env, 'SLACK_API_URL', DEFAULTS.slackApiUrl);
  if (/[?#]/.test(apiUrl)) {
    // Not echoed, as urlVar does not: the URL may carry credentials.
    throw new ConfigError(
      'SLACK_API_URL',
      `SLACK_API_URL has a query (?…) or a fragment (#…), which would come before every method name: write the Web API base URL alone (default ${DEFAULTS.slackApiUrl}), or unset it`,
    );
  }
  return apiUrl;
}

/** Slack settings; `channel` is unset when SLACK_CHANNEL is, for the config file to supply it. */
export function slackConfig(env: NodeJS.ProcessEnv): Omit<SlackConfig, 'channel'> & { channel?: string } {
  // Token values are never put into a message.
  const botToken = check(
    'SLACK_BOT_TOKEN',
    secretVar(env, 'SLACK_BOT_TOKEN', BOT_TOKEN_FIX) ??
      required(
        env,
        'SLACK_BOT_TOKEN',
        "set it to the bot token (xoxb-…) from your Slack app's OAuth & Permissions page",
      ),
    z.string().startsWith('xoxb-'),
    "must start with xoxb-: use the Bot User OAuth Token from your Slack app's OAuth & Permissions page (not a user or app-level token)",
  );
  const rawAppToken = secretVar(env, 'SLACK_APP_TOKEN', APP_TOKEN_FIX);
  const appToken =
    rawAppToken === undefined
      ? undefined
      : check(
          'SLACK_APP_TOKEN',
          rawAppToken,
          z.string().startsWith('xapp-'),
          "must start with xapp-: create an app-level token with the connections:write scope on your Slack app's Basic Information page, or unset it to use HTTP mode",
        );
  const mode = appToken ? 'socket' : 'http';
  const signingSecret =
    mode === 'http'
      ? requiredInHttpMode(env, 'SLACK_SIGNING_SECRET')
      : secretVar(env, 'SLACK_SIGNING_SECRET', SIGNING_SECRET_FIX);
  const apiUrl = apiUrlVar(env);
  const apiTimeoutMs = durationVar(env, 'SLACK_API_TIMEOUT', DEFAULTS.slackApiTimeout);
  const rawChannel = read(env, 'SLACK_CHANNEL');
  const slackChannel =
    rawChannel === undefined
      ? undefined
      : check(
          'SLACK_CHANNEL',
          rawChannel,
          channel,
          `must be a channel ID such as C0123456789 (or #channel-name) (got ${shown(rawChannel)}): copy the ID from the channel details in Slack`,
        );
  return {
    botToken,
    ...(appToken ? { appToken } : {}),
    ...(signingSecret ? { signingSecret } : {}),
    apiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`,
    apiTimeoutMs,
    ...(slackChannel ? { channel: slackChannel } : {}),
    mode,
  };
}

/** SLACK_CHANNEL wins; without it, a catch-all route's channel is where unrouted cards would go anyway. */
export function defaultChannel(
  env: NodeJS.ProcessEnv,
  slackChannel: string | undefined,
  routes: Route[],
): string {
  return (
    slackChannel ??
    routes.find((route) => route.match === undefined)?.channel ??
    required(
      env,
      'SLACK_CHANNEL',
      'set it to the ID of the channel for approval cards (C… or G…; shown at the bottom of the channel details in Slack), or add a route without match to COUNTERSIGN_CONFIG',
    )
  );
}
