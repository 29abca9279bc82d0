// What the log shows of a host process's error, on the errors Node really gives: a spawn that
// fails after the fact (its spawnargs hold the command line) and one refused at once (its
// message quotes the refused value).

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processErrorFields } from '../../../src/msp/hostFailure.js';

const SECRET = 'processErrorSecret-0001';

describe('processErrorFields', () => {
  it('a spawn in a cwd that is gone: code, errno and syscall, not the command line', async () => {
    const child = spawn('/bin/sh', ['-c', `muse serve --licence ${SECRET}`], {
      cwd: join(tmpdir(), 'countersign-no-such-dir-0001'),
      env: { MUSE_LICENSE: SECRET },
      stdio: 'ignore',
    });
    const [error] = (await once(child, 'error')) as [NodeJS.ErrnoException & { spawnargs?: string[] }];
    expect(error.spawnargs?.join(' ')).toContain(SECRET);

    const fields = processErrorFields(error);
    expect(fields).toEqual({
      code: 'ENOENT',
      errno: -2,
      syscall: 'spawn /bin/sh',
      message: 'spawn /bin/sh ENOENT',
    });
  });

  it.each([
    [
      'an argument',
      () => spawn('/bin/sh', ['-c', `muse serve --licence ${SECRET}\0`]),
      "The argument 'args[1]'",
    ],
    [
      'an env value',
      () => spawn('/bin/sh', ['-c', 'true'], { env: { MUSE_LICENSE: `${SECRET}\0` } }),
      "The property 'options.env['MUSE_LICENSE']'",
    ],
  ])('%s with a NUL: the message says which, without quoting it', (_what, start, which) => {
    let thrown: unknown;
    try {
      start();
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).message).toContain(SECRET);

    const fields = processErrorFields(thrown);
    expect(fields).toEqual({
      code: 'ERR_INVALID_ARG_VALUE',
      message: `${which} must be a string without null bytes`,
    });
  });
});
