// The "Reject all" forms open now, on real Redis: what a submit trusts instead of the form's
// metadata, taken once, each user's apart, gone after its TTL.

import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { BATCH_GROUP_ID_MAX_CHARS, BATCH_MAX_MEMBERS } from '../../src/domain/batchGroup.js';
import { BatchRejectForms } from '../../src/store/batchRejectForms.js';
import { keys } from '../../src/store/keys.js';
import { useFreshRedis } from '../support/freshRedis.js';

const fresh = useFreshRedis();
let redis: Redis;
beforeEach(() => {
  redis = fresh();
});

const FORM = {
  channel: 'C0APPROVALS',
  groupId: 'C0APPROVALS:abc',
  members: [
    ['a', 0],
    ['b', 1],
  ] as Array<[string, number]>,
  refused: ['b'],
};

describe('BatchRejectForms', () => {
  it('a form is taken once, by its own user; kept again, it is taken once more', async () => {
    const forms = new BatchRejectForms(redis);
    const formId = await forms.opened('U0ALICE', FORM);
    expect(await forms.take('U0EVE', formId)).toBeUndefined();
    expect(await forms.take('U0ALICE', formId)).toEqual(FORM);
    // A replay of the same submit finds nothing: it is checked in full.
    expect(await forms.take('U0ALICE', formId)).toBeUndefined();
    await forms.kept('U0ALICE', formId, { ...FORM, refused: ['a', 'b'] });
    expect((await forms.take('U0ALICE', formId))?.refused).toEqual(['a', 'b']);
  });

  it('a form is forgotten after its TTL', async () => {
    const forms = new BatchRejectForms(redis, 50);
    const formId = await forms.opened('U0ALICE', FORM);
    await new Promise((r) => setTimeout(r, 120));
    expect(await forms.take('U0ALICE', formId)).toBeUndefined();
  });

  it('a kept form naming a group id longer than Countersign makes is unusable, and gone once read', async () => {
    const forms = new BatchRejectForms(redis);
    // As an earlier release kept it, from a button value it did not cap.
    const stored = {
      c: FORM.channel,
      g: FORM.groupId.padEnd(BATCH_GROUP_ID_MAX_CHARS + 1, '0'),
      m: FORM.members,
      r: [],
    };
    await redis.set(keys.batchRejectForm('U0ALICE', 'f-long'), JSON.stringify(stored), 'PX', 60_000);
    expect(await forms.take('U0ALICE', 'f-long')).toBeUndefined();
    expect(await redis.exists(keys.batchRejectForm('U0ALICE', 'f-long'))).toBe(0);
  });

  it('a kept form listing more members than a summary carries is unusable, and gone once read', async () => {
    const forms = new BatchRejectForms(redis);
    // Opened before the cap: its button's value was not held to BATCH_MAX_MEMBERS.
    const members = Array.from({ length: BATCH_MAX_MEMBERS + 1 }, (_, i) => [`a-${i}`, 0]);
    const stored = { c: FORM.channel, g: FORM.groupId, m: members, r: [] };
    await redis.set(keys.batchRejectForm('U0ALICE', 'f-many'), JSON.stringify(stored), 'PX', 60_000);
    expect(await forms.take('U0ALICE', 'f-many')).toBeUndefined();
    expect(await redis.exists(keys.batchRejectForm('U0ALICE', 'f-many'))).toBe(0);
  });
});
