import {
  FEEDBACK_BLOCK_ID,
  FEEDBACK_INPUT_ACTION_ID,
  FEEDBACK_VIEW_CALLBACK_ID,
} from '../../src/cards/ids.js';
import { SIGNING_SECRET } from '../../test/support/bot.js';
import type { FakeSlack } from '../../test/support/fakeSlack.js';
import {
  blockActionsPayload,
  postInteraction,
  viewSubmissionPayload,
} from '../../test/support/slackRequests.js';
import type { Click } from './audit.js';
import { type CardButton, type CardView, cardView } from './cardView.js';
import { type Plan, type Press, planIndexOf, pressesFor } from './chaosPlan.js';

// Teammates in front of the channels: they press a card's buttons as soon as it shows them, as
// each approval's plan says, with signed requests as Slack sends them. A card that still asks the
// same question a while after they pressed (the bot was down, Redis did not answer, they were
// told to click again) is pressed again, as a person would.

export interface SlackUsersOptions {
  slack: FakeSlack;
  /** The bot's URL now (it changes when the bot is restarted). */
  botUrl: () => string;
  channels: readonly string[];
  plans: (index: number) => Plan;
  /** How long a card may keep asking the same question after a press before it is pressed again. */
  againAfterMs: number;
  /** How long the slowest users (pace 1) take to press once a card asks them. */
  slowestPressMs: number;
}

interface Attempt {
  at: number;
  busy: boolean;
}

let triggers = 0;

export class SlackUsers {
  /** Every press and modal submission made, whether or not the bot got it. */
  readonly clicks: Click[] = [];
  /** Requests the bot did not answer with 200 (down, restarting). */
  failedRequests = 0;
  private readonly attempts = new Map<string, Attempt>();
  /** When each question (approvalId#stage) was first seen on a card. */
  private readonly shown = new Map<string, number>();
  private unsubscribe: () => void = () => {};
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly opts: SlackUsersOptions) {}

  start(): void {
    this.unsubscribe = this.opts.slack.onChange(() => this.look());
    this.timer = setInterval(() => this.look(), 100);
    this.look();
  }

  /** Stops pressing and waits for the presses under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  private look(): void {
    if (this.stopped) return;
    const now = Date.now();
    for (const channel of this.opts.channels) {
      for (const message of this.opts.slack.messagesIn(channel)) {
        const card = cardView(message);
        const asked = card?.buttons[0]?.sourceIndex;
        if (!card || asked === undefined) continue;
        const index = planIndexOf(card.approvalId);
        if (index === undefined) continue;
        const key = `${card.approvalId}#${asked}`;
        const shown = this.shown.get(key) ?? now;
        this.shown.set(key, shown);
        const plan = this.opts.plans(index);
        if (now - shown < plan.pace * this.opts.slowestPressMs) continue;
        const attempt = this.attempts.get(key);
        if (attempt && (attempt.busy || now - attempt.at < this.opts.againAfterMs)) continue;
        const presses = pressesFor(plan, asked);
        if (presses.length === 0) continue;
        // Pressed again, it is by the first user alone: the second one saw it was handled.
        const who = attempt ? presses.slice(0, 1) : presses;
        const entry: Attempt = { at: now, busy: true };
        this.attempts.set(key, entry);
        const work = Promise.all(who.map((p) => this.press(card, asked, p))).then(() => {
          entry.busy = false;
          entry.at = Date.now();
        });
        this.inFlight.add(work);
        void work.finally(() => this.inFlight.delete(work));
      }
    }
  }

  private async press(card: CardView, sourceIndex: number, press: Press): Promise<void> {
    const button = press.choices
      .map((choiceId) => card.buttons.find((b) => b.choiceId === choiceId))
      .find((b): b is CardButton => b !== undefined);
    if (!button) return;
    const click = {
      approvalId: card.approvalId,
      sourceIndex,
      choiceId: button.choiceId,
      userId: press.userId,
    };
    if (press.reason === undefined) this.clicks.push(click);
    triggers += 1;
    const triggerId = `${Date.now()}.${triggers}.chaos`;
    const pressed = await this.send(
      blockActionsPayload({
        userId: press.userId,
        channel: card.channel,
        ts: card.ts,
        actionId: button.actionId,
        value: button.value,
        triggerId,
        responseUrl: this.opts.slack.responseUrl(`chaos-${triggers}`),
      }),
    );
    if (!pressed || press.reason === undefined) return;
    // A choice that takes a reason opens the modal; the user types it and submits.
    const opened = await this.opts.slack
      .waitFor('views.open', (c) => c.args.trigger_id === triggerId, 3_000)
      .catch(() => undefined);
    const view = opened?.args.view as { private_metadata?: string } | undefined;
    if (!view?.private_metadata) return;
    this.clicks.push(click);
    await this.send(
      viewSubmissionPayload({
        userId: press.userId,
        callbackId: FEEDBACK_VIEW_CALLBACK_ID,
        privateMetadata: view.private_metadata,
        values: {
          [FEEDBACK_BLOCK_ID]: {
            [FEEDBACK_INPUT_ACTION_ID]: { type: 'plain_text_input', value: press.reason },
          },
        },
      }),
    );
  }

  /** Posts an interaction to the bot; false when it did not answer 200 (down, restarting). */
  private async send(payload: Record<string, unknown>): Promise<boolean> {
    try {
      const response = await postInteraction(this.opts.botUrl(), SIGNING_SECRET, payload, {});
      await response.arrayBuffer();
      if (response.status === 200) return true;
    } catch {
      // connection refused or reset: the bot is down
    }
    this.failedRequests += 1;
    return false;
  }
}
