import type { App } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { z } from 'zod';
import { REVOKE_GRANT_ACTION_ID } from '../../cards/ids.js';
import { revokeAnswer } from '../../cards/renderRevocation.js';
import type { RevokeOutcome, RevokeVia } from '../../domain/grants/revocation.js';
import type { GrantRevoker } from '../../relay/grants/grantRevoker.js';
import { answerInPrivate, ephemeral } from '../answerInPrivate.js';
import type { HomeTab } from '../homeTab.js';
import { classifyRespondError } from '../slackFailures.js';

const RevokeBody = z.looseObject({
  user: z.looseObject({ id: z.string() }),
  /** `view` for App Home; a message (the ephemeral /countersign grants answer) otherwise. */
  container: z.looseObject({ type: z.string().optional(), channel_id: z.string().optional() }).optional(),
  channel: z.looseObject({ id: z.string() }).optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
});

export const REVOKE_FAILED_TEXT =
  'Countersign could not revoke that grant just now (its database did not answer), so it may still be in force. Check `/countersign grants` and try again in a moment.';

/** Revokes for a person and says how it went; a Redis failure becomes a sentence too. */
export async function revokeFor(
  revoker: GrantRevoker,
  grantId: string,
  userId: string,
  via: RevokeVia,
  logger: Logger,
): Promise<{ text: string; outcome?: RevokeOutcome }> {
  try {
    const outcome = await revoker.revoke(grantId, userId, via);
    return { text: revokeAnswer(outcome), outcome };
  } catch (err) {
    logger.warn({ err, grantId, userId, via }, 'could not revoke a grant');
    return { text: REVOKE_FAILED_TEXT };
  }
}

/**
 * A grant's Revoke button, in the /countersign grants answer or on App Home. The button's value
 * is only the grant's id: who may revoke it is checked by the GrantRevoker. The answer goes to
 * the person alone: an ephemeral message through the response_url (or, should that fail, in the
 * channel: answerInPrivate), or a note on their Home.
 */
export function registerRevokeButton(
  app: App,
  options: { revoker: GrantRevoker; home: HomeTab; web: WebClient; logger: Logger },
): void {
  const { revoker, home, web, logger } = options;
  app.action(REVOKE_GRANT_ACTION_ID, async ({ ack, body, respond }) => {
    await ack();
    const parsed = RevokeBody.safeParse(body);
    const grantId = parsed.success ? parsed.data.actions[0]?.value : undefined;
    if (!parsed.success || !grantId) {
      logger.warn(
        { issues: parsed.success ? 'no grant id' : parsed.error.issues },
        'unusable revoke payload',
      );
      return;
    }
    const userId = parsed.data.user.id;
    const { text, outcome } = await revokeFor(revoker, grantId, userId, 'button', logger);
    if (outcome?.kind === 'revoked') home.grantsChanged();
    if (parsed.data.container?.type === 'view') {
      home.changed(userId, text);
      return;
    }
    const channelId = parsed.data.channel?.id ?? parsed.data.container?.channel_id;
    const ways = { respond, web, logger };
    if (channelId === undefined) {
      // No channel to fall back on: the response_url alone, its failure logged without the URL.
      await respond({ ...ephemeral({ text, blocks: [] }), replace_original: false }).catch((err: unknown) => {
        logger.warn(
          { userId, grantId, responseUrl: classifyRespondError(err) },
          'could not answer a Revoke button',
        );
      });
      return;
    }
    await answerInPrivate(
      { text, blocks: [] },
      { userId, channelId, what: 'a Revoke button', about: { grantId } },
      ways,
      { replace_original: false },
    );
  });
}
