import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import type { HomeTab } from '../homeTab.js';

/**
 * App Home: published when the user opens the tab (slack/homeTab.ts keeps it fresh afterwards).
 * Its "Open card" buttons are links; Slack still sends their clicks here, and they want an ack.
 */
export function registerHomeOpened(app: App, home: HomeTab, logger: Logger): void {
  app.event('app_home_opened', async ({ event }) => {
    if (event.tab !== 'home') return;
    await home.opened(event.user).catch((err: unknown) => {
      logger.warn({ err, userId: event.user }, 'could not note who opened the App Home');
    });
  });
  app.action(/^cs_home_open_/, async ({ ack }) => {
    await ack();
  });
}
