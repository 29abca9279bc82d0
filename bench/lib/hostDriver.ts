import type { FakeHost } from '../../test/support/fakeHost.js';
import type { Plan } from './chaosPlan.js';
import { planIndexOf } from './chaosPlan.js';
import type { HostWatch } from './hostWatch.js';

// The agent side of a chaos run: the host asks the burst's approvals at a steady rate, and its
// policy settles some of them on its own a little after they were asked.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Asks one approval. While the host is down the command waits for the next host process; when
 * its acknowledgement is lost with a dying host, the host's state says whether it was asked.
 */
async function ask(host: FakeHost, watch: HostWatch, plan: Plan, deadline: number): Promise<void> {
  for (;;) {
    try {
      await host.open(plan.approval, { via: 'both' });
      return;
    } catch (err) {
      if (watch.poll().approvals[plan.approvalId]) return;
      if (Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

/** Asks `plans` at `ratePerSec`, calling `atHalf` once half of them are asked (not awaited). */
export async function askBurst(
  host: FakeHost,
  watch: HostWatch,
  plans: Plan[],
  ratePerSec: number,
  atHalf: () => void,
): Promise<void> {
  const started = Date.now();
  const deadline = started + (plans.length / ratePerSec) * 1000 + 60_000;
  for (const [i, plan] of plans.entries()) {
    if (i === Math.floor(plans.length / 2)) atHalf();
    const due = started + (i * 1000) / ratePerSec;
    if (due > Date.now()) await sleep(due - Date.now());
    await ask(host, watch, plan, deadline);
  }
}

/** The host's own policy: settles approvals whose plan says so, `afterMs` after they were asked. */
export class HostPolicy {
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly done = new Set<string>();

  constructor(
    private readonly host: FakeHost,
    private readonly watch: HostWatch,
    private readonly plans: (index: number) => Plan,
    private readonly afterMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), 200);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const now = Date.now();
      for (const [approvalId, rec] of Object.entries(this.watch.state.approvals)) {
        if (rec.resolved || this.done.has(approvalId)) continue;
        const index = planIndexOf(approvalId);
        const fate = index === undefined ? undefined : this.plans(index).fate;
        if (fate !== 'policyApproves' && fate !== 'policyDenies') continue;
        const seenAt = this.watch.sightings.get(approvalId)?.seenAt ?? now;
        if (now - seenAt < this.afterMs) continue;
        try {
          await this.host.resolve({
            approvalId,
            decision: fate === 'policyApproves' ? 'approved' : 'denied',
            resolvedBy: 'policy',
          });
          this.done.add(approvalId);
        } catch {
          // The host is down, or closed it meanwhile: looked at again on the next tick.
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
