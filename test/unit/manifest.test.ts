// The Slack app manifests: manifest.yml (Socket Mode) and manifest.http.yml (HTTP mode) agree on
// everything but how Slack reaches the bot; they ask for exactly the bot scopes the code's Web
// API calls need; and the scope table of docs/slack.md names the same scopes, each with its
// reason. A scope added to one and not the others, or without a call that needs it, fails here.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../support/bot.js';

interface Manifest {
  features: {
    app_home: Record<string, boolean>;
    slash_commands: Array<{ command: string; url?: string }>;
  };
  oauth_config: { scopes: { bot: string[] } };
  settings: {
    socket_mode_enabled: boolean;
    interactivity: { is_enabled: boolean; request_url?: string };
    event_subscriptions: { request_url?: string; bot_events: string[] };
  };
}

const MANIFESTS = { socket: 'manifest.yml', http: 'manifest.http.yml' } as const;

function manifest(file: string): Manifest {
  return parse(readFileSync(join(PROJECT_ROOT, file), 'utf8')) as Manifest;
}

/** Where Bolt and the press route listen in HTTP mode (src/slack/createSlackApp.ts). */
const EVENTS_PATH = '/slack/events';

/**
 * The bot scopes each Slack Web API method the code calls needs (per Slack's method reference),
 * a method Countersign calls with a bot token. A call the code makes that is not listed here
 * fails the test below: add it with its scopes.
 */
const METHOD_SCOPES: Record<string, string[]> = {
  'auth.test': [],
  'chat.postMessage': ['chat:write'],
  'chat.update': ['chat:write'],
  'chat.postEphemeral': ['chat:write'],
  'chat.getPermalink': [],
  // Public and private channels alike (a route may name either).
  'conversations.history': ['channels:history', 'groups:history'],
  'conversations.members': ['channels:read', 'groups:read'],
  'conversations.info': ['channels:read', 'groups:read'],
  'conversations.open': ['im:write'],
  'usergroups.list': ['usergroups:read'],
  'usergroups.users.list': ['usergroups:read'],
  'users.info': ['users:read'],
  'users.lookupByEmail': ['users:read.email'],
  // The channels the bot is in: the ID of a route's #name (channelIds.ts).
  'users.conversations': ['channels:read', 'groups:read'],
  'views.open': [],
  'views.push': [],
  'views.update': [],
  'views.publish': [],
};

const FAMILIES = 'chat|conversations|usergroups|users|views|auth';
/** Array and Set methods on fields that happen to be named `users` or `usergroups`. */
const NOT_SLACK = new Set(['map', 'find', 'includes', 'push', 'add', 'filter', 'some', 'has', 'length']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every Web API method src/ calls: `client.chat.postMessage(…)`, or by name, `call('chat.update', …)`. */
function methodsCalled(): Set<string> {
  const called = new Set<string>();
  const call = new RegExp(`\\b\\w+\\.(${FAMILIES})\\.([a-z]\\w*)(?:\\.([a-z]\\w*))?\\(`, 'g');
  const named = new RegExp(`\\(\\s*'((?:${FAMILIES})\\.[a-z]\\w*(?:\\.[a-z]\\w*)?)'`, 'g');
  for (const file of sourceFiles(join(PROJECT_ROOT, 'src'))) {
    const code = readFileSync(file, 'utf8');
    for (const [, family, method, sub] of code.matchAll(call)) {
      if (NOT_SLACK.has(method!)) continue;
      called.add([family, method, sub].filter(Boolean).join('.'));
    }
    for (const [, method] of code.matchAll(named)) called.add(method!);
  }
  return called;
}

/** Scopes of the docs/slack.md table under "## Slack scopes", from the first column of each row. */
function docScopes(): string[] {
  const doc = readFileSync(join(PROJECT_ROOT, 'docs', 'slack.md'), 'utf8');
  const start = doc.indexOf('## Slack scopes');
  const table = doc.slice(start, doc.indexOf('\n## ', start));
  return [...table.matchAll(/^\| (`[^|]+`) \| ([^|]*) \|/gm)].flatMap(([, cell, why]) => {
    expect(why!.trim(), `docs/slack.md gives a reason for ${cell}`).not.toBe('');
    return [...cell!.matchAll(/`([a-z:._]+)`/g)].map((m) => m[1]!);
  });
}

describe.each(Object.values(MANIFESTS))('%s', (file) => {
  const asked = manifest(file).oauth_config.scopes.bot;

  test('asks for exactly the bot scopes the code’s Slack calls need, and none twice', () => {
    const called = methodsCalled();
    // The regexes find the calls at all: a few the code is known to make.
    expect([...called]).toEqual(
      expect.arrayContaining(['chat.postMessage', 'conversations.history', 'conversations.members']),
    );
    const unknown = [...called].filter((method) => !(method in METHOD_SCOPES));
    expect(unknown, 'methods the code calls that METHOD_SCOPES does not list').toEqual([]);
    const needed = new Set([...called].flatMap((method) => METHOD_SCOPES[method]!));
    // The slash command is a feature of the manifest, not a Web API call.
    if (manifest(file).features.slash_commands.length > 0) needed.add('commands');
    expect(new Set(asked).size).toBe(asked.length);
    expect([...asked].sort()).toEqual([...needed].sort());
  });

  test('never asks for chat:write.public: the bot posts only where it was invited', () => {
    expect(asked).not.toContain('chat:write.public');
  });

  test('docs/slack.md explains exactly the bot scopes it asks for', () => {
    expect([...docScopes()].sort()).toEqual([...asked].sort());
  });

  test('each scope has a comment saying what it is for', () => {
    const lines = readFileSync(join(PROJECT_ROOT, file), 'utf8').split('\n');
    for (const scope of asked) {
      const i = lines.findIndex(
        (line) => line.trim().startsWith(`- ${scope} `) || line.trim() === `- ${scope}`,
      );
      expect(i, scope).toBeGreaterThan(-1);
      // Its own trailing comment, or the comment block just above a group of scopes.
      const commented = lines[i]!.includes('#') || lines[i - 1]!.trim().startsWith('#');
      expect(commented, `${scope} has a comment`).toBe(true);
    }
  });

  test('the Messages tab is there for the bot’s DMs, and read-only: nobody is answered there', () => {
    expect(manifest(file).features.app_home).toMatchObject({
      home_tab_enabled: true,
      messages_tab_enabled: true,
      messages_tab_read_only_enabled: true,
    });
  });
});

describe('the two manifests', () => {
  /** A manifest without what only one mode has: Socket Mode, and the URLs Slack calls in HTTP mode. */
  function withoutMode(m: Manifest): unknown {
    const copy = structuredClone(m);
    delete (copy.settings as Partial<Manifest['settings']>).socket_mode_enabled;
    delete copy.settings.interactivity.request_url;
    delete copy.settings.event_subscriptions.request_url;
    for (const command of copy.features.slash_commands) delete command.url;
    return copy;
  }

  test('agree on everything but how Slack reaches the bot', () => {
    expect(withoutMode(manifest(MANIFESTS.http))).toEqual(withoutMode(manifest(MANIFESTS.socket)));
  });

  test('Socket Mode has no URL; HTTP mode sends events, interactions and /countersign to /slack/events', () => {
    const socket = manifest(MANIFESTS.socket);
    expect(socket.settings.socket_mode_enabled).toBe(true);
    expect(socket.settings.interactivity.request_url).toBeUndefined();
    expect(socket.settings.event_subscriptions.request_url).toBeUndefined();
    expect(socket.features.slash_commands.map((c) => c.url)).toEqual([undefined]);

    const http = manifest(MANIFESTS.http);
    expect(http.settings.socket_mode_enabled).toBe(false);
    const urls = [
      http.settings.interactivity.request_url,
      http.settings.event_subscriptions.request_url,
      ...http.features.slash_commands.map((c) => c.url),
    ];
    expect(urls).toHaveLength(3);
    for (const url of urls) {
      expect(url).toMatch(/^https:\/\//);
      expect(new URL(url!).pathname).toBe(EVENTS_PATH);
    }
    expect(new Set(urls).size).toBe(1);
  });

  test('the events path is the one the bot listens on', () => {
    const code = readFileSync(join(PROJECT_ROOT, 'src', 'slack', 'createSlackApp.ts'), 'utf8');
    expect(code).toContain(`const SLACK_EVENTS_PATH = '${EVENTS_PATH}';`);
  });
});
