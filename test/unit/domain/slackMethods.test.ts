// Every Slack Web API method the bot calls has its own label in /metrics: a method left off
// SLACK_METHODS is counted as `other`, and an operator cannot tell which call is failing (the
// #name lookup's users.conversations and the shared-channel check's conversations.info were).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SLACK_METHODS, slackMethodLabel } from '../../../src/domain/metrics.js';

const SRC = join(import.meta.dirname, '../../../src');

/** The Web API methods called in the source: `client.chat.postMessage(`, `this.web.users.info(`. */
function methodsCalledIn(dir: string): Set<string> {
  const found = new Set<string>();
  const call =
    /\b(?:web|client|slackClient)\.((?:auth|chat|conversations|usergroups|users|views|team)\.[a-zA-Z]+(?:\.[a-zA-Z]+)?)\(/g;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = readFileSync(join(entry.parentPath, entry.name), 'utf8');
    for (const match of text.matchAll(call)) found.add(match[1]!);
  }
  return found;
}

describe('Slack method labels', () => {
  it('name every Web API method the source calls', () => {
    const called = [...methodsCalledIn(SRC)].sort();
    // The scan itself must see the calls it is meant to check.
    expect(called).toEqual(
      expect.arrayContaining(['chat.postMessage', 'users.conversations', 'conversations.info']),
    );
    expect(called.filter((method) => slackMethodLabel(method) === 'other')).toEqual([]);
  });

  it('count any other method as other', () => {
    expect(slackMethodLabel('admin.users.remove')).toBe('other');
    expect(SLACK_METHODS).toContain('other');
  });
});
