// countersign.example.yml as a test loads it. Its host's cwd is a deployment's (/srv/agents), and
// start-up checks that a host's cwd is a directory: the copy puts a directory of the test there.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from './bot.js';

/** The cwd the example gives its host. */
export const EXAMPLE_CWD = '/srv/agents';

/** A copy of the example whose host's cwd is `cwd`, a fresh directory; `path` is the copy. */
export function exampleConfig(): { path: string; cwd: string } {
  const text = readFileSync(join(PROJECT_ROOT, 'countersign.example.yml'), 'utf8');
  const line = `cwd: ${EXAMPLE_CWD} `;
  // Exactly one, so that the copy is the example but for this value.
  if (text.split(line).length !== 2) throw new Error(`countersign.example.yml no longer has "${line}" once`);
  const cwd = mkdtempSync(join(tmpdir(), 'countersign-example-'));
  const path = join(cwd, 'countersign.yml');
  writeFileSync(path, text.replace(line, `cwd: ${cwd} `));
  return { path, cwd };
}
