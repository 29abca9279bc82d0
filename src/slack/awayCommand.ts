import { renderAwayRefusal, renderAwaySet, renderBack } from '../cards/renderAway.js';
import { isExternal } from '../domain/authorization.js';
import { type Away, delegateRefusal, parseAway } from '../domain/away.js';
import type { RenderedMessage } from '../domain/messages.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { type AwayStore, MAX_STAND_INS } from '../store/awayStore.js';

// `/countersign away until <when> [delegate @user]` and `/countersign back`: each person sets
// their own absence, stored in Redis (every replica honours it at once) and ended by its expiry.
// Every refusal says why, to the person who typed it only; nothing is changed then.

export interface AwayCommandOptions {
  store: Pick<AwayStore, 'set' | 'clear'>;
  /** Who Slack says the user and their delegate are (strangers, bots). */
  authorizer: Pick<Authorizer, 'whoIs'>;
  /** The absence changed: these users' Homes show it (the user, their delegate and the one before). */
  onChanged: (userIds: readonly string[]) => void;
  now?: () => number;
}

export function awayCommands(options: AwayCommandOptions) {
  const now = options.now ?? Date.now;
  return {
    away: async ({ userId, args }: { userId: string; args: string[] }): Promise<RenderedMessage> => {
      const nowMs = now();
      const asked = parseAway(args, userId, nowMs);
      if (!asked.ok) return renderAwayRefusal(asked.why);
      // Strangers get nothing: a guest or another team's user cannot be away, or stand in.
      const you = await options.authorizer.whoIs(userId);
      if (!you.person || !you.workspace) return renderAwayRefusal({ kind: 'youUnknown' });
      if (you.person.guest || isExternal(you.person, you.workspace))
        return renderAwayRefusal({ kind: 'youStranger' });
      if (asked.delegate) {
        const them = await options.authorizer.whoIs(asked.delegate);
        const refused = delegateRefusal(them.person, them.workspace);
        if (refused) return renderAwayRefusal(refused);
      }
      const away: Away = {
        userId,
        until: new Date(asked.untilMs).toISOString(),
        ...(asked.delegate ? { delegate: asked.delegate } : {}),
        since: new Date(nowMs).toISOString(),
      };
      const stored = await options.store.set(away);
      // Whom a delegate stands in for is read no further than MAX_STAND_INS (awayStore.ts): one
      // more would be told the delegate stands in while no check ever saw it.
      if (stored.full) return renderAwayRefusal({ kind: 'delegateFull', max: MAX_STAND_INS });
      const was = stored.previous;
      // A delegate replaced or dropped no longer stands in: their Home must stop saying so.
      const delegates = new Set([asked.delegate, was?.delegate].filter((d) => d !== undefined));
      options.onChanged([userId, ...delegates]);
      return renderAwaySet(away);
    },
    back: async ({ userId }: { userId: string }): Promise<RenderedMessage> => {
      const was = await options.store.clear(userId);
      options.onChanged([userId, ...(was?.delegate ? [was.delegate] : [])]);
      return renderBack(was);
    },
  };
}
