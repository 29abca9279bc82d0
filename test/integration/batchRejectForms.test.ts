// The "Reject all" forms open now, on real Redis: what a submit trusts instead of the form's
// metadata, taken once, each user's apart, gone after its TTL.

import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { BatchRejectForms } from '../../src/store/batchRejectForms.js';
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
});
