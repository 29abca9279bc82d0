// manifest.yml and README's scope table name the same bot scopes, each with its reason: a scope
// added to one and not the other, or added without saying why, fails here.

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

/** Scopes of the README table under "### Slack scopes", from the first column of each row. */
function readmeScopes(): string[] {
  const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('### Slack scopes');
  const table = readme.slice(start, readme.indexOf('\n## ', start));
  return [...table.matchAll(/^\| (`[^|]+`) \| ([^|]*) \|/gm)].flatMap(([, cell, why]) => {
    expect(why!.trim(), `README gives a reason for ${cell}`).not.toBe('');
    return [...cell!.matchAll(/`([a-z:._]+)`/g)].map((m) => m[1]!);
  });
}

test('README explains exactly the bot scopes the manifest asks for', () => {
  const asked = manifestScopes();
  expect(new Set(asked).size).toBe(asked.length);
  expect([...readmeScopes()].sort()).toEqual([...asked].sort());
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
