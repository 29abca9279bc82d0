import type { HomeView, ModalView } from '@slack/types';
import type { WebClient } from '@slack/web-api';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** The views the listeners open and publish, through the one Web API client. */
export interface SlackViews {
  open(triggerId: string, view: ModalView): Promise<void>;
  /** On top of the modal the trigger came from (a choice pressed in a modal). */
  push(triggerId: string, view: ModalView): Promise<void>;
  /** Replaces an open modal. */
  update(viewId: string, view: ModalView): Promise<void>;
  publish(userId: string, view: HomeView): Promise<void>;
}

/** A person is waiting on each of these: a few quick retries, then the caller hears of it. */
export function slackViews(client: WebClient): SlackViews {
  return {
    async open(triggerId, view) {
      await retrySlackCall(
        () => client.views.open({ trigger_id: triggerId, view }),
        RETRY_POLICIES.interactive,
      );
    },
    async push(triggerId, view) {
      await retrySlackCall(
        () => client.views.push({ trigger_id: triggerId, view }),
        RETRY_POLICIES.interactive,
      );
    },
    async update(viewId, view) {
      await retrySlackCall(() => client.views.update({ view_id: viewId, view }), RETRY_POLICIES.interactive);
    },
    async publish(userId, view) {
      await retrySlackCall(() => client.views.publish({ user_id: userId, view }), RETRY_POLICIES.interactive);
    },
  };
}
