// What users.info says of a user, as the Authorizer reads it.

import { describe, expect, it } from 'vitest';
import { personOf } from '../../../src/slack/peopleDirectory.js';

describe('personOf', () => {
  it('reads the team, a guest, a bot and a deactivated account', () => {
    expect(personOf({ id: 'U1', team_id: 'T1' })).toEqual({ teamId: 'T1', guest: false });
    expect(personOf({ id: 'U2', team_id: 'T1', is_restricted: true })).toMatchObject({ guest: true });
    expect(personOf({ id: 'U3', team_id: 'T1', is_bot: true })).toMatchObject({ bot: true });
    expect(personOf({ id: 'U4', team_id: 'T1', deleted: true })).toMatchObject({ deactivated: true });
  });
});
