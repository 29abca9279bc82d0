// The Dockerfile, read statically (no Docker engine in CI): a reproducible base on a supported Node
// line, tini as PID 1, the same Node flags as `npm start`, OCI labels, and an unprivileged user.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRODUCTION_NODE_ARGS, PROJECT_ROOT } from '../../support/bot.js';

interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions in order: comments dropped, `\` continuations joined. Enough for our own file. */
function instructions(text: string): Instruction[] {
  const logical = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return logical.map((line) => {
    const [keyword = '', ...rest] = line.split(/\s+/);
    return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
  });
}

/** The instructions of each stage, from its FROM to the next. */
function stages(all: Instruction[]): Instruction[][] {
  const out: Instruction[][] = [];
  for (const instruction of all) {
    if (instruction.keyword === 'FROM') out.push([]);
    out.at(-1)?.push(instruction);
  }
  return out;
}

/** `LABEL a="x" b="y z"` → { a: 'x', b: 'y z' }. */
function labels(stage: Instruction[]): Record<string, string> {
  const pairs = stage
    .filter((i) => i.keyword === 'LABEL')
    .flatMap((i) => [...i.args.matchAll(/([\w.-]+)="([^"]*)"/g)]);
  return Object.fromEntries(pairs.map((m) => [m[1]!, m[2]!]));
}

const dockerfile = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
const all = instructions(dockerfile);
const runtime = stages(all).at(-1) ?? [];
const last = (keyword: string) => runtime.filter((i) => i.keyword === keyword).at(-1);

describe('Dockerfile', () => {
  it('pins every FROM by digest, on one Node LTS line that is still supported (22 or later)', () => {
    const froms = all.filter((i) => i.keyword === 'FROM').map((i) => i.args.split(/\s+/)[0]!);
    expect(froms.length).toBeGreaterThan(1);
    const majors = froms.map((image) => {
      expect(image, 'a Debian slim Node image pinned by its sha256 digest').toMatch(
        /^node:\d+(\.\d+\.\d+)?-bookworm-slim@sha256:[0-9a-f]{64}$/,
      );
      return Number(/^node:(\d+)[.-]/.exec(image)?.[1]);
    });
    expect(new Set(majors).size, `build and runtime run one Node line (${froms.join(', ')})`).toBe(1);
    const major = majors[0]!;
    expect(major % 2, 'an even major, i.e. an LTS line').toBe(0);
    expect(major).toBeGreaterThanOrEqual(22);
  });

  it('runs tini from Debian as PID 1, so the host’s exited children are reaped without --init', () => {
    expect(JSON.parse(last('ENTRYPOINT')?.args ?? 'null')).toEqual(['/usr/bin/tini', '--']);
    const installs = runtime.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(installs.some((run) => /apt-get install\b.*\btini\b/.test(run))).toBe(true);
  });

  it('installs socat from Debian, the bridge deploy/ and docker-compose.yml give the bot as its host command', () => {
    const installs = runtime.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(installs.some((run) => /apt-get install\b.*\bsocat\b/.test(run))).toBe(true);
    const config = readFileSync(
      join(PROJECT_ROOT, 'deploy', 'kubernetes', 'base', 'countersign.yml'),
      'utf8',
    );
    const compose = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
    expect(config).toMatch(/^\s+command: socat .*UNIX-CONNECT:/m);
    expect(compose).toMatch(/^\s+MSP_HOST_COMMAND: socat .*UNIX-CONNECT:/m);
  });

  it('starts node with exactly the flags of the start script in package.json', () => {
    expect(PRODUCTION_NODE_ARGS.length).toBeGreaterThan(0);
    expect(JSON.parse(last('CMD')?.args ?? 'null')).toEqual([
      'node',
      ...PRODUCTION_NODE_ARGS,
      'dist/main.js',
    ]);
  });

  it('runs as the unprivileged node user', () => {
    expect(last('USER')?.args).toBe('node');
    const userAt = runtime.lastIndexOf(last('USER')!);
    expect(runtime.slice(userAt).some((i) => i.keyword === 'USER' && i.args !== 'node')).toBe(false);
  });

  it('labels the image (OCI), with version, revision and creation time given as build arguments', () => {
    const found = labels(runtime);
    for (const key of ['title', 'description', 'source', 'licenses', 'version', 'revision', 'created']) {
      expect(found, key).toHaveProperty(`org.opencontainers.image.${key}`);
    }
    expect(found['org.opencontainers.image.title']).toBe('countersign');
    const args = runtime.filter((i) => i.keyword === 'ARG').map((i) => i.args.split('=')[0]);
    for (const [key, arg] of [
      ['version', 'VERSION'],
      ['revision', 'REVISION'],
      ['created', 'CREATED'],
    ] as const) {
      expect(found[`org.opencontainers.image.${key}`]).toBe(`\${${arg}}`);
      expect(args, `ARG ${arg} is declared in the runtime stage`).toContain(arg);
    }
  });
});

describe('source maps', () => {
  it('are used when the build emits them: node runs with --enable-source-maps', () => {
    const base = JSON.parse(readFileSync(join(PROJECT_ROOT, 'tsconfig.json'), 'utf8'));
    const build = JSON.parse(readFileSync(join(PROJECT_ROOT, 'tsconfig.build.json'), 'utf8'));
    const emitsMaps = build.compilerOptions?.sourceMap ?? base.compilerOptions?.sourceMap ?? false;
    expect(PRODUCTION_NODE_ARGS.includes('--enable-source-maps')).toBe(emitsMaps);
  });
});

describe('the --init advice', () => {
  it('is gone: the image carries its own init, and Kubernetes has no --init', () => {
    for (const file of ['Dockerfile', 'README.md', 'docs/operations.md']) {
      const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
      expect(text, file).not.toMatch(/--init\b|init: true/);
    }
  });
});
