// What the simulated agent host asks for: one approval every few seconds, cycling through the
// kinds of request a team meets (files, multi-stage shell, network, a protected write, one held
// by the automated reviewer then escalated, one the host's policy settles by itself, a subject
// kind the bot does not know, and a burst of alike requests that gets one batch summary).

import { v7 as uuidv7 } from 'uuid';
import {
  type ApprovalInput,
  approvalFromTranscript,
  type FakeHost,
  type SeedSession,
  shellApproval,
} from '../test/support/fakeHost.js';

export const DEMO_SESSIONS: SeedSession[] = [
  {
    sessionId: '0198f0aa-1111-7000-8000-0000000000aa',
    title: 'Add rate limiting to the login endpoint',
    status: 'running',
    workspaceRoot: '/srv/shop',
  },
  {
    sessionId: '0198f0aa-2222-7000-8000-0000000000bb',
    title: 'Upgrade CI to Node 20',
    status: 'running',
    workspaceRoot: '/srv/infra',
  },
];
const [LOGIN, CI] = DEMO_SESSIONS.map((s) => s.sessionId) as [string, string];

/** Stop opening new approvals while this many wait for a person: the page stays readable. */
const MAX_PENDING = 8;

/** Later work a scene schedules on the host (an escalation, a policy decision). */
type Later = (afterMs: number, run: () => Promise<unknown>) => void;

interface Scene {
  name: string;
  play(host: FakeHost, later: Later, intervalMs: number): Promise<unknown>;
}

function fileWrite(path: string, content: string, extra: Partial<ApprovalInput> = {}): ApprovalInput {
  return {
    approvalId: uuidv7(),
    sessionId: LOGIN,
    toolName: 'write_file',
    rawArgs: JSON.stringify({ path, content }),
    subject: { kind: 'fileAccess', toolName: 'write_file', path, access: 'write' },
    reason: 'Writes inside the workspace need approval in this session.',
    ...extra,
  };
}

/**
 * The order matters to the browser test: a file write first, then a multi-stage shell command,
 * then a force push (typed confirmation), then the burst whose batch summary it looks for.
 */
export const SCENES: Scene[] = [
  {
    name: 'file write (with agent-written markup, shown as text)',
    play: (host) =>
      host.open(
        fileWrite(
          '/srv/shop/README.md',
          '# Shop\n\n<img src="x" onerror="alert(document.cookie)"> Build: passing\n\nPing <!channel> when the rate limit ships. See <https://evil.example|https://bank.example>.',
        ),
      ),
  },
  {
    name: 'multi-stage shell command',
    play: (host) =>
      host.open(
        shellApproval({
          approvalId: uuidv7(),
          sessionId: LOGIN,
          workspaceRoot: '/srv/shop',
          stages: [
            ['npm', 'ci'],
            ['npm', 'test', '--', '--grep', 'rate limit'],
            ['git', 'push', 'origin', 'feat/login-rate-limit'],
          ],
        }),
      ),
  },
  {
    name: 'force push (a risk rule asks the approver to type the branch)',
    play: (host) =>
      host.open(
        shellApproval({
          approvalId: uuidv7(),
          sessionId: LOGIN,
          workspaceRoot: '/srv/shop',
          stages: [['git', 'push', '--force-with-lease', 'origin', 'feat/login-rate-limit']],
        }),
      ),
  },
  {
    // Batch triage (docs/slack.md#batch-triage): alike requests at once get one summary card.
    name: 'a burst of alike requests (one batch summary card)',
    play: (host) =>
      Promise.all(
        ['/srv/shop', '/srv/shop-wt-2', '/srv/infra'].map((workspaceRoot, i) =>
          host.open(
            shellApproval({
              approvalId: uuidv7(),
              sessionId: i === 2 ? CI : LOGIN,
              workspaceRoot,
              stages: [['npm', 'run', 'lint']],
            }),
          ),
        ),
      ),
  },
  {
    name: 'network connection',
    play: (host) =>
      host.open({
        approvalId: uuidv7(),
        sessionId: CI,
        toolName: 'http_fetch',
        rawArgs: JSON.stringify({ url: 'https://nodejs.org/dist/index.json', method: 'GET' }),
        subject: {
          kind: 'network',
          host: 'nodejs.org',
          port: 443,
          protocol: 'https',
          origin: { kind: 'command', command: 'curl -sS https://nodejs.org/dist/index.json' },
        },
        reason: 'Outbound connections are off by default in this sandbox.',
      }),
  },
  {
    name: 'protected write',
    play: (host) =>
      host.open(
        fileWrite(
          '/srv/infra/.github/workflows/deploy.yml',
          'name: deploy\non: push\njobs:\n  deploy:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/setup-node@v4\n        with: { node-version: 20 }\n',
          { sessionId: CI, protectedWrite: true, reason: 'CI workflow files are protected paths.' },
        ),
      ),
  },
  {
    name: 'held by the automated reviewer, then escalated to a person',
    play: async (host, later, intervalMs) => {
      const approval = shellApproval({
        approvalId: uuidv7(),
        sessionId: CI,
        workspaceRoot: '/srv/infra',
        stages: [['rm', '-rf', 'node_modules', '/tmp/ci-cache']],
      });
      approval.reviewerReason = 'Deletes a directory outside the workspace (/tmp/ci-cache).';
      await host.open(approval, { via: 'reviewing-then-request' });
      later(Math.max(1_500, intervalMs), () => host.escalate(approval.approvalId));
    },
  },
  {
    name: 'recorded from a real host',
    play: (host) =>
      host.open({
        ...approvalFromTranscript('approval-round-trip', { approvalId: uuidv7() }),
        sessionId: LOGIN,
      }),
  },
  {
    name: 'settled by the host policy while nobody clicked',
    play: async (host, later, intervalMs) => {
      const approval = fileWrite('/srv/shop/src/login/rateLimit.test.ts', "import { test } from 'vitest';\n");
      await host.open(approval);
      later(Math.max(2_000, 2 * intervalMs), () =>
        host.resolve({ approvalId: approval.approvalId, decision: 'approved', resolvedBy: 'policy' }),
      );
    },
  },
  {
    name: 'a subject kind the bot does not know',
    play: (host) =>
      host.open({
        approvalId: uuidv7(),
        sessionId: LOGIN,
        toolName: 'browser_navigate',
        rawArgs: JSON.stringify({ url: 'https://staging.shop.example/login', waitFor: 'networkidle' }),
        subject: {
          kind: 'browserSession',
          toolName: 'browser_navigate',
          url: 'https://staging.shop.example/login',
          profile: 'qa-bot',
        },
      }),
  },
];

export interface Scenario {
  /** Stops opening approvals and cancels what was scheduled. */
  stop(): void;
}

/**
 * Plays SCENES in order, one every `intervalMs` (the first at once), and starts over when done.
 * `onError` hears about a scene that failed; the stream goes on.
 */
export function playScenario(
  host: FakeHost,
  opts: { intervalMs: number; onError: (scene: string, err: unknown) => void },
): Scenario {
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  let next = 0;
  const schedule = (afterMs: number, run: () => Promise<unknown> | undefined) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) void run();
    }, afterMs);
    timers.add(timer);
  };
  const later: Later = (afterMs, run) =>
    schedule(afterMs, () => run().catch((err: unknown) => opts.onError('scheduled step', err)));
  const tick = async () => {
    const scene = SCENES[next % SCENES.length]!;
    try {
      if (host.pendingApprovals().length < MAX_PENDING) {
        next += 1;
        await scene.play(host, later, opts.intervalMs);
      }
    } catch (err) {
      opts.onError(scene.name, err);
    }
    schedule(opts.intervalMs, tick);
  };
  schedule(0, tick);
  return {
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
