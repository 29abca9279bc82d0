import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { BATCH_GROUP_ID_MAX_CHARS, BATCH_MAX_MEMBERS } from '../domain/batchGroup.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * How long an open "Reject all" form is known here. One submitted later is checked in full again,
 * every refusal audited (a refusal audited when it opened may then be audited twice, never not at
 * all); a form is seldom left open that long over requests waiting on it.
 */
export const BATCH_REJECT_FORM_TTL_MS = 60 * 60 * 1_000;

/** What a "Reject all" form was opened on, as the server saw it: nothing of it comes from Slack's client. */
export interface BatchRejectFormState {
  /** The channel its summary's button was pressed in. */
  channel: string;
  /** The summary's group id and members (approvalId, sourceIndex), as its button carried them. */
  groupId: string;
  members: ReadonlyArray<readonly [string, number]>;
  /** The members whose refusal (who may decide) was audited when the form opened. */
  refused: readonly string[];
}

/**
 * A form kept by an earlier release holds what its button value said, uncapped then: one that
 * names a group id longer than Countersign makes (a Redis key part) or lists more members than a
 * summary carries is unusable, as one that does not parse, and its submit is refused as a form no
 * longer open, before any member is read.
 */
const Stored = z.object({
  c: z.string(),
  g: z.string().max(BATCH_GROUP_ID_MAX_CHARS),
  m: z.array(z.tuple([z.string(), z.number().int()])).max(BATCH_MAX_MEMBERS),
  r: z.array(z.string()),
});

/**
 * The "Reject all" forms open now, one key per form, under its user's tag, with a TTL
 * (docs/slack.md#batch-triage). A form's metadata travels through Slack's client, which may
 * change it; what the submit trusts is kept here, and read once: a submit takes it, and it is
 * kept again only while the form stays open (a submit refused in the form itself).
 */
export class BatchRejectForms {
  constructor(
    private readonly redis: RedisClient,
    private readonly ttlMs = BATCH_REJECT_FORM_TTL_MS,
  ) {}

  /** Keeps a form about to open; its id is what the form's metadata carries. */
  async opened(userId: string, form: BatchRejectFormState): Promise<string> {
    const formId = randomBytes(16).toString('base64url');
    await this.kept(userId, formId, form);
    return formId;
  }

  /** The form, once: a second submit of it (a replay) finds nothing. */
  async take(userId: string, formId: string): Promise<BatchRejectFormState | undefined> {
    const key = keys.batchRejectForm(userId, formId);
    const result = await this.redis.multi().get(key).del(key).exec();
    const raw = result?.[0]?.[1];
    if (typeof raw !== 'string') return undefined;
    const parsed = Stored.safeParse(JSON.parse(raw));
    if (!parsed.success) return undefined;
    const { c, g, m, r } = parsed.data;
    return { channel: c, groupId: g, members: m, refused: r };
  }

  /** Keeps a taken form again: it is still open, to be submitted again. */
  async kept(userId: string, formId: string, form: BatchRejectFormState): Promise<void> {
    const stored: z.infer<typeof Stored> = {
      c: form.channel,
      g: form.groupId,
      m: form.members.map(([id, index]) => [id, index]),
      r: [...form.refused],
    };
    await this.redis.set(keys.batchRejectForm(userId, formId), JSON.stringify(stored), 'PX', this.ttlMs);
  }
}
