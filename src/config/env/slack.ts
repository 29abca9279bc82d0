// The Slack settings: tokens, the mode they imply (Socket Mode with an app token, else HTTP),
// the Web API, and the default channel for cards.

import { z } from 'zod';
import type { Route } from '../../domain/route.js';
import { CHANNEL_ID, ConfigError, shown } from '../common.js';
import { DEFAULTS } from '../defaults.js';
import { ConfigProblems } from '../problems.js';
import { baseUrlVar, check, durationVar, read, required, secretVar } from './read.js';

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
  return baseUrlVar(env, 'SLACK_API_URL', DEFAULTS.slackApiUrl, {
    calls: 'would come before every method name',
    what: 'Web API base URL',
  });
}

function botTokenVar(env: NodeJS.ProcessEnv): string {
  // Token values are never put into a message.
  return check(
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
}

function appTokenVar(env: NodeJS.ProcessEnv): string | undefined {
  const rawAppToken = secretVar(env, 'SLACK_APP_TOKEN', APP_TOKEN_FIX);
  return rawAppToken === undefined
    ? undefined
    : check(
        'SLACK_APP_TOKEN',
        rawAppToken,
        z.string().startsWith('xapp-'),
        "must start with xapp-: create an app-level token with the connections:write scope on your Slack app's Basic Information page, or unset it to use HTTP mode",
      );
}

/** Slack settings but the channel (slackChannelVar), each variable read on its own. */
export function slackConfig(env: NodeJS.ProcessEnv): Omit<SlackConfig, 'channel'> {
  // Every invalid variable is named at once (problems.ts), not only the first.
  const problems = new ConfigProblems();
  const botToken = problems.take(() => botTokenVar(env));
  const appToken = problems.take(() => appTokenVar(env));
  // An app token set but invalid still says Socket Mode is meant: no signing secret is asked for.
  const mode = read(env, 'SLACK_APP_TOKEN') !== undefined ? 'socket' : 'http';
  const signingSecret = problems.take(() =>
    mode === 'http'
      ? requiredInHttpMode(env, 'SLACK_SIGNING_SECRET')
      : secretVar(env, 'SLACK_SIGNING_SECRET', SIGNING_SECRET_FIX),
  );
  const apiUrl = problems.take(() => apiUrlVar(env));
  const apiTimeoutMs = problems.take(() => durationVar(env, 'SLACK_API_TIMEOUT', DEFAULTS.slackApiTimeout));
  problems.throwIfAny();
  return {
    botToken: botToken!,
    ...(appToken ? { appToken } : {}),
    ...(signingSecret ? { signingSecret } : {}),
    apiUrl: apiUrl!.endsWith('/') ? apiUrl! : `${apiUrl}/`,
    apiTimeoutMs: apiTimeoutMs!,
    mode,
  };
}

/** SLACK_CHANNEL as written, checked; unset when it is, for the config file to supply it. */
export function slackChannelVar(env: NodeJS.ProcessEnv): string | undefined {
  const rawChannel = read(env, 'SLACK_CHANNEL');
  return rawChannel === undefined
    ? undefined
    : check(
        'SLACK_CHANNEL',
        rawChannel,
        channel,
        `must be a channel ID such as C0123456789 (or #channel-name) (got ${shown(rawChannel)}): copy the ID from the channel details in Slack`,
      );
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
