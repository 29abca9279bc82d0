// manifest.yml and the scope table of docs/slack.md name the same bot scopes, each with its
// reason: a scope added to one and not the other, or added without saying why, fails here.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../support/bot.js';

function manifestScopes(): string[] {
  const manifest = parse(readFileSync(join(PROJECT_ROOT, 'manifest.yml'), 'utf8')) as {
    oauth_config: { scopes: { bot: string[] } };
  };
  return manifest.oauth_config.scopes.bot;
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

test('docs/slack.md explains exactly the bot scopes the manifest asks for', () => {
  const asked = manifestScopes();
  expect(new Set(asked).size).toBe(asked.length);
  expect([...docScopes()].sort()).toEqual([...asked].sort());
});

test('each manifest scope has a comment saying what it is for', () => {
  const lines = readFileSync(join(PROJECT_ROOT, 'manifest.yml'), 'utf8').split('\n');
  for (const scope of manifestScopes()) {
    const i = lines.findIndex(
      (line) => line.trim().startsWith(`- ${scope} `) || line.trim() === `- ${scope}`,
    );
    expect(i, scope).toBeGreaterThan(-1);
    // Its own trailing comment, or the comment block just above a group of scopes.
    const commented = lines[i]!.includes('#') || lines[i - 1]!.trim().startsWith('#');
    expect(commented, `${scope} has a comment`).toBe(true);
  }
});
