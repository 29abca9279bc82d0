import type { DecideFrame, FakeHost } from '../../test/support/fakeHost.js';

/** One approval/decide the host read: which choice, and when (the host's process.hrtime). */
export interface Decide {
  approvalId: string;
  choiceId: string;
  hr: bigint;
}

/** Follows the approval/decide requests the host reads, without rescanning old frames. */
export class DecideTracker {
  /** First decide per approvalId. */
  readonly decides = new Map<string, Decide>();
  /** approvalIds decided more than once (the host refuses all but the first). */
  readonly duplicates: string[] = [];
  private cursor: number;

  constructor(private readonly host: FakeHost) {
    this.cursor = host.frames.length;
  }

  private scan(): void {
    const frames = this.host.frames;
    for (; this.cursor < frames.length; this.cursor++) {
      const f = frames[this.cursor]!;
      if (typeof f.frame === 'string' || f.frame.method !== 'approval/decide') continue;
      const { params } = (f as DecideFrame).frame;
      if (this.decides.has(params.approvalId)) this.duplicates.push(params.approvalId);
      else
        this.decides.set(params.approvalId, {
          approvalId: params.approvalId,
          choiceId: params.choiceId,
          hr: f.hr,
        });
    }
  }

  /** Decides of one batch (approvalIds starting with `prefix-`). */
  of(prefix: string): Decide[] {
    this.scan();
    return [...this.decides.values()].filter((d) => d.approvalId.startsWith(`${prefix}-`));
  }
}
