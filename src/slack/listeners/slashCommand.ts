import type { App } from '@slack/bolt';

/**
 * /countersign. Listing and revoking grants and pending approvals from here is still to come;
 * until then the command says where approvals are, rather than leaving Slack to time out.
 */
export function registerSlashCommand(app: App, channel: string): void {
  app.command('/countersign', async ({ ack }) => {
    await ack({
      response_type: 'ephemeral',
      text: `Countersign is running. Approval cards are posted in ${channelLink(channel)}; decide there with one click. Listing pending approvals and grants from this command is coming soon.`,
    });
  });
}

/** A channel ID becomes a link; a #name stays as written. */
export function channelLink(channel: string): string {
  return /^[CG][A-Z0-9]+$/.test(channel) ? `<#${channel}>` : channel.replace(/[&<>]/g, '');
}
