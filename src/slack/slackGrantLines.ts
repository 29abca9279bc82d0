import { renderGrantLine } from '../cards/renderGrant.js';
import { renderRevokedLine } from '../cards/renderRevocation.js';
import { callerOwner, type Grant } from '../domain/grants/grant.js';
import type { GrantQuestion } from '../domain/grants/match.js';
import type { ApprovalRecord } from '../domain/record.js';
import type { GrantLineSender } from '../relay/grants/grantAnswerer.js';
import { grantRef } from '../relay/grants/grantAnswerer.js';
import type { RevocationNotices } from '../relay/grants/grantRevoker.js';
import type { SlackNoticeSender } from './slackNotices.js';

/**
 * Posts the lines grants leave in their channels (a use, a revocation), naming people rather than
 * pinging them.
 */
export class SlackGrantLines implements GrantLineSender, RevocationNotices {
  constructor(
    private readonly sender: SlackNoticeSender,
    private readonly options: { showHost: boolean },
  ) {}

  async grantUsed(record: ApprovalRecord, grant: Grant, question: GrantQuestion): Promise<void> {
    const stage = record.subject.stages?.find((s) => s.requirementId.sourceIndex === question.sourceIndex);
    const grantedByName = await this.sender.nameOf(grant.grantedBy);
    const text = renderGrantLine({
      tool: record.tool,
      capabilities: question.capabilities,
      ...(stage ? { stage: { position: stage.position, total: stage.totalStages } } : {}),
      grant: grantRef(grant),
      ...(grantedByName ? { grantedByName } : {}),
      ...(this.options.showHost ? { hostId: record.hostId } : {}),
    });
    await this.sender.channelLine(record.slack.channel, text);
  }

  async grantRevoked(grant: Grant, by: string): Promise<void> {
    const owner = callerOwner(grant.caller);
    const [byName, grantedByName, ownerName] = await Promise.all([
      this.sender.nameOf(by),
      this.sender.nameOf(grant.grantedBy),
      owner ? this.sender.nameOf(owner) : undefined,
    ]);
    const text = renderRevokedLine({
      grant,
      by,
      ...(byName ? { byName } : {}),
      ...(grantedByName ? { grantedByName } : {}),
      ...(ownerName ? { ownerName } : {}),
    });
    await this.sender.channelLine(grant.channel, text);
  }
}
