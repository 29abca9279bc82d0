/** A channel ID becomes a link; a #name stays as written. */
export function channelLink(channel: string): string {
  return /^[CG][A-Z0-9]+$/.test(channel) ? `<#${channel}>` : channel.replace(/[&<>]/g, '');
}
