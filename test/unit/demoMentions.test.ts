import { describe, expect, it } from 'vitest';
import { escapeMentions } from '../../demo/workspace.js';

// The demo sends slash commands as Slack does for a command with should_escape: a typed @name of
// a demo user reaches the bot as a user reference, anything else as typed.

describe('the demo’s command text', () => {
  it('turns @first-name and @id of a demo user into <@ID|typed>, and leaves the rest', () => {
    expect(escapeMentions('away until 3d delegate @bob')).toBe('away until 3d delegate <@U0BOB|bob>');
    expect(escapeMentions('@U0CAROL @Alice @nobody')).toBe('<@U0CAROL|U0CAROL> <@U0ALICE|Alice> @nobody');
  });
});
