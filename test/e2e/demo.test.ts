// `npm run demo` in a real browser: the demo as a user starts it (its own process: the bot,
// the simulated host, the Slack stand-in and the page), driven through headless Chromium with
// real clicks. No browser is downloaded: playwright-core drives the system's Chromium.

import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort, freshRedisDb, PROJECT_ROOT } from '../support/bot.js';
import { testRedisUrl } from '../support/testRedis.js';

// CHROMIUM_PATH, when set, is the only browser tried.
const CHROMIUM = (
  process.env.CHROMIUM_PATH ? [process.env.CHROMIUM_PATH] : ['/usr/bin/chromium', '/usr/bin/chromium-browser']
).find((p) => existsSync(p));
const INSTALL_BROWSER =
  'Install it with `sudo apt-get install -y chromium`, or set CHROMIUM_PATH to a Chromium or Chrome binary (.ci/run installs it and sets REQUIRE_BROWSER=1).';
// This machine's network is closed: Chromium must not try to reach anything in the background.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const WAIT_MS = 15_000;

test.runIf(!CHROMIUM && process.env.REQUIRE_BROWSER === '1')(
  'a browser for the demo test is installed',
  () => {
    throw new Error(`REQUIRE_BROWSER=1, but Chromium is not installed. ${INSTALL_BROWSER}`);
  },
);
if (!CHROMIUM && process.env.REQUIRE_BROWSER !== '1')
  process.stderr.write(
    `Chromium is not installed, so the demo browser test is skipped. ${INSTALL_BROWSER}\n`,
  );

interface StartedDemo {
  proc: ChildProcess;
  pageUrl: string;
  botUrl: string;
  output: string[];
  exited: Promise<number | null>;
}

/** Runs demo/run.ts as `npm run demo` does after its build (globalSetup has built dist/). */
function spawnDemo(env: Record<string, string>): Omit<StartedDemo, 'pageUrl' | 'botUrl'> {
  // A process group of its own, as a terminal gives it: what it starts (the bot, the host, a
  // private Redis) stays in the group, so the test can see that none outlives it.
  const proc = spawn(process.execPath, ['--import', 'tsx', 'demo/run.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output: string[] = [];
  proc.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  proc.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return { proc, output, exited };
}

/** Starts the demo and waits for the line with its URL. */
async function startDemo(env: Record<string, string>): Promise<StartedDemo> {
  const demo = spawnDemo(env);
  const started = new Promise<{ pageUrl: string; botUrl: string }>((resolveStart, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the demo printed no URL within 30 s:\n${demo.output.join('')}`)),
      30_000,
    );
    demo.proc.stdout?.on('data', () => {
      const m = /open (http:\/\/\S+\/) \(bot (http:\/\/\S+),/.exec(demo.output.join(''));
      if (m) {
        clearTimeout(timer);
        resolveStart({ pageUrl: m[1]!, botUrl: m[2]! });
      }
    });
    void demo.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the demo exited (code ${code}) before it was ready:\n${demo.output.join('')}`));
    });
  });
  return { ...demo, ...(await started) };
}

/** Whether any process of the demo's group is still alive. */
function groupAlive(demo: Pick<StartedDemo, 'proc'>): boolean {
  try {
    process.kill(-demo.proc.pid!, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once the demo's whole process group has gone, or after `timeoutMs`. */
async function groupGone(demo: Pick<StartedDemo, 'proc'>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (groupAlive(demo)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
}

/**
 * Presses the mouse button on `button` and keeps it down. Aiming is Playwright's (scrolled into
 * view, steady, not covered); a redraw between the aim and the press can still move the button,
 * so the press is checked (`:active`) and, when it missed, let go elsewhere and made again.
 */
async function holdDown(page: Page, button: Locator): Promise<void> {
  for (let attempt = 1; attempt <= 5; attempt++) {
    await button.hover();
    await page.mouse.down();
    if (await button.evaluate((node) => node.matches(':active'))) return;
    // Let go away from every button: a press and release on different elements clicks nothing.
    await page.mouse.move(0, 0);
    await page.mouse.up();
  }
  throw new Error('could not press the button: it kept moving');
}

/** The message whose header reads `header` (and that contains `text`, if given). */
function card(page: Page, header: string, text?: string): Locator {
  let messages = page.locator('article.message', {
    has: page.locator('.bk-header-text', { hasText: header }),
  });
  if (text) messages = messages.filter({ hasText: text });
  return messages.first();
}

describe.skipIf(!CHROMIUM)('npm run demo, in a real browser', () => {
  let demo: StartedDemo;
  let browser: BrowserContext;
  let page: Page;
  let profileDir: string;
  const pageErrors: string[] = [];
  const nativeDialogs: string[] = [];

  beforeAll(async () => {
    const db = await freshRedisDb();
    demo = await startDemo({
      DEMO_PORT: String(await freePort()),
      DEMO_INTERVAL_MS: '400',
      REDIS_URL: testRedisUrl(db),
    });
    profileDir = mkdtempSync(join(tmpdir(), 'demo-chromium-'));
    browser = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM!,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 860 },
    });
    page = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('dialog', (dialog) => {
      nativeDialogs.push(dialog.message());
      void dialog.dismiss();
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    // Whatever a failed test left running goes with the group.
    if (demo && groupAlive(demo)) process.kill(-demo.proc.pid!, 'SIGKILL');
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  });

  test('shows a card, takes "Allow once", and takes a rejection with its reason from the modal', async () => {
    // 1–2. The page shows the first card the simulated host asked for.
    await page.goto(demo.pageUrl);
    const write = card(page, 'Approval needed: write_file', 'README.md');
    await write.waitFor();
    // The agent wrote markup into the file: it is shown as text, never run.
    await write.getByText('<img src=\\"x\\" onerror=', { exact: false }).waitFor();
    expect(await page.locator('article.message img').count()).toBe(0);
    const writeTs = await write.getAttribute('data-ts');
    expect(writeTs).toBeTruthy();

    // 3. "Allow once": the bot decides and the card becomes final, naming who decided.
    await write.getByRole('button', { name: 'Allow once', exact: true }).click();
    const decided = page.locator(`article.message[data-ts="${writeTs}"]`);
    await decided.locator('.bk-header-text', { hasText: 'Approved: write_file' }).waitFor();
    await decided.getByText('@Alice Moreau').waitFor();
    expect(await decided.getByRole('button').count()).toBe(0);

    // 4. "Reject" asks to confirm, then opens the reason modal; the card shows the reason.
    const shell = card(page, 'Approval needed: bash', 'npm ci');
    const shellTs = await shell.getAttribute('data-ts');
    await shell.getByRole('button', { name: 'Reject', exact: true }).click();
    const confirm = page.getByRole('alertdialog');
    await confirm.getByText('Reject this?').waitFor();
    await confirm.getByRole('button', { name: 'Reject', exact: true }).click();
    const modal = page.getByRole('dialog', { name: 'Add a reason' });
    const reason = 'Not before the release freeze ends <b>Friday</b>';
    await modal.getByLabel('Reason (optional)').fill(reason);
    await modal.getByRole('button', { name: 'Send', exact: true }).click();
    await modal.waitFor({ state: 'detached' });
    const rejected = page.locator(`article.message[data-ts="${shellTs}"]`);
    await rejected.locator('.bk-header-text', { hasText: 'Rejected: bash' }).waitFor();
    // The card itself, and under it the audit line in its thread, each with the reason as typed.
    const rejectedCard = rejected.locator(':scope > .message-body > :not(.thread)');
    await rejectedCard.getByText(`Feedback: ${reason}`).waitFor();
    const threadLine = rejected.locator('.thread article.message');
    await threadLine.getByText(/Rejected by Alice Moreau/).waitFor();
    await threadLine.getByText(`Feedback: ${reason}`).waitFor();

    // 5. A screenshot of the channel as it stands (DEMO_SCREENSHOT also keeps a copy, for docs/).
    const shotDir = mkdtempSync(join(tmpdir(), 'demo-shot-'));
    const shot = join(shotDir, 'demo.png');
    // Tall enough for the approved card, the rejected one and the next one with its buttons.
    await page.setViewportSize({ width: 1280, height: 1500 });
    await decided.evaluate((node) => node.scrollIntoView({ block: 'start' }));
    await page.mouse.move(0, 0);
    await page.screenshot({ path: shot });
    expect(statSync(shot).size).toBeGreaterThan(20_000);
    if (process.env.DEMO_SCREENSHOT) copyFileSync(shot, resolve(PROJECT_ROOT, process.env.DEMO_SCREENSHOT));
    rmSync(shotDir, { recursive: true, force: true });

    expect(pageErrors).toEqual([]);
    expect(nativeDialogs).toEqual([]);
  }, 90_000);

  test('a force push asks for its branch to be typed: a wrong text approves nothing, the branch does', async () => {
    await page.goto(demo.pageUrl);
    const push = card(page, 'Approval needed: bash', '--force-with-lease');
    await push.getByText('Rewrites shared history').waitFor();
    const pushTs = await push.getAttribute('data-ts');
    await push.getByRole('button', { name: 'Allow once', exact: true }).click();
    const modal = page.getByRole('dialog', { name: 'Confirm approval' });
    await modal.getByText('risk rule').waitFor();
    const field = modal.getByLabel('Type the command’s target to approve');
    await field.fill('main');
    await modal.getByRole('button', { name: 'Approve', exact: true }).click();
    await modal.getByText('That is not the command’s target (feat/login-rate-limit)').waitFor();
    const pending = page.locator(`article.message[data-ts="${pushTs}"]`);
    expect(await pending.getByRole('button', { name: 'Allow once', exact: true }).count()).toBe(1);

    await field.fill('feat/login-rate-limit');
    await modal.getByRole('button', { name: 'Approve', exact: true }).click();
    await modal.waitFor({ state: 'detached' });
    await pending.locator('.bk-header-text', { hasText: 'Approved: bash' }).waitFor();
    expect(pageErrors).toEqual([]);
    expect(nativeDialogs).toEqual([]);
  }, 60_000);

  test('a burst of alike requests gets one batch summary, with its buttons and links to the cards', async () => {
    await page.goto(demo.pageUrl);
    const summary = card(page, 'alike requests waiting');
    await summary.waitFor();
    await summary.getByText('exec:npm run lint').first().waitFor();
    await summary.getByRole('button', { name: /^Approve all \d+ once$/ }).waitFor();
    await summary.getByRole('button', { name: 'Reject all', exact: true }).waitFor();
    expect(await summary.locator('a[href*="/archives/"]').count()).toBeGreaterThanOrEqual(2);
    // "Review one by one" decides nothing: the clicker alone is told the cards stay as they are.
    await summary.getByRole('button', { name: 'Review one by one', exact: true }).click();
    await page.locator('article.message.ephemeral', { hasText: 'The cards stay as they are' }).waitFor();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test('a button held down while the channel redraws still takes the click when it is let go', async () => {
    // The channel redraws whenever anything in it changes. A card that did not change must stay
    // in the page through it, and the channel must not scroll it away from under the pointer, or
    // a press that spans the redraw is lost: people hold a button for a tenth of a second or
    // more, and under load so does the browser driving this test (CI once lost "Allow once").
    await page.goto(demo.pageUrl);
    const fetchCard = card(page, 'Approval needed: http_fetch');
    await fetchCard.waitFor();
    const pressed = page.locator(`article.message[data-ts="${await fetchCard.getAttribute('data-ts')}"]`);
    const button = pressed.getByRole('button', { name: 'Allow once', exact: true });
    // Noted on the page, which outlives the button: the card loses its buttons once decided.
    await button.evaluate((node) =>
      node.addEventListener('click', () =>
        node.ownerDocument.body.setAttribute('data-clicked', 'allow-once'),
      ),
    );
    await holdDown(page, button);
    // The same user types a command in another tab: its ephemeral reply redraws this channel.
    const replies = page.locator('article.message.ephemeral');
    const before = await replies.count();
    const typed = await fetch(new URL('/api/command', demo.pageUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'U0ALICE', command: '/countersign', text: 'whoami' }),
    });
    expect(typed.status).toBe(200);
    await expect.poll(() => replies.count(), { timeout: WAIT_MS }).toBeGreaterThan(before);
    await page.mouse.up();
    // The click reached the button (or was lost in the page), then the bot decided.
    expect(await page.locator('body').getAttribute('data-clicked')).toBe('allow-once');
    await pressed.locator('.bk-header-text', { hasText: 'Approved: http_fetch' }).waitFor();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test('each user sees only their own ephemeral replies, and their own App Home', async () => {
    await page.goto(demo.pageUrl);
    await page.getByPlaceholder('Message #approvals').fill('/countersign help');
    await page.keyboard.press('Enter');
    const reply = page.locator('article.message.ephemeral', { hasText: 'Countersign is running' });
    await reply.getByText('Only visible to you').waitFor();

    await page.getByLabel('You are').selectOption('U0BOB');
    await page.locator('article.message').first().waitFor();
    await reply.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Countersign', exact: true }).click();
    await page.locator('#home-view').getByText('Approval requests from your agents are posted in').waitFor();
    await page.locator('#home-view').getByText('Agent host: 🟢 up').waitFor();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test('Ctrl-C stops the bot, the host, the page and everything else, leaving no process behind', async () => {
    expect(await answers(`${demo.botUrl}/healthz`)).toBe(true);
    // Only the demo's own process is signalled: it must stop the rest itself.
    demo.proc.kill('SIGINT');
    expect(await demo.exited).toBe(0);
    expect(await answers(demo.pageUrl)).toBe(false);
    expect(await answers(`${demo.botUrl}/healthz`)).toBe(false);
    expect(await groupGone(demo, 10_000)).toBe(true);
  }, 30_000);
});

describe('npm run demo refuses a bad setting with one line', () => {
  test('a port that is in use, before it starts anything else', async () => {
    const busy = http.createServer();
    const port = await freePort();
    await new Promise<void>((r) => busy.listen(port, '127.0.0.1', () => r()));
    // A database the demo would refuse: the port must be what it complains about, first.
    const redisUrl = testRedisUrl(await freshRedisDb());
    const redis = new Redis(redisUrl);
    await redis.set('someone-else', 'x');
    await redis.quit();
    try {
      const demo = spawnDemo({ DEMO_PORT: String(port), REDIS_URL: redisUrl });
      expect(await demo.exited).toBe(1);
      expect(demo.output.join('')).toBe(
        `countersign demo: port ${port} is in use; set DEMO_PORT to a free port\n`,
      );
    } finally {
      busy.close();
    }
  }, 30_000);

  test('a DEMO_INTERVAL_MS that is not a number of milliseconds', async () => {
    const demo = spawnDemo({ DEMO_INTERVAL_MS: '4s' });
    expect(await demo.exited).toBe(1);
    expect(demo.output.join('')).toBe(
      'countersign demo: DEMO_INTERVAL_MS must be a whole number from 100 to 600000 (got "4s")\n',
    );
  }, 30_000);
});
