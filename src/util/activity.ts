// What the bot did, counted for /metrics. A log line per approval costs the hot path more than the
// approval's own Redis write (pino formats and writes it); a counter costs an addition.

export type ActivityKind = 'cardsPosted' | 'decisionsSent' | 'noticesSent';

export class Activity {
  readonly counts: Record<ActivityKind, number> = { cardsPosted: 0, decisionsSent: 0, noticesSent: 0 };

  count(kind: ActivityKind): void {
    this.counts[kind] += 1;
  }
}
