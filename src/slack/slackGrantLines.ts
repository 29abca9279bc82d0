import { renderGrantLine } from '../cards/renderGrant.js';
import type { Grant } from '../grants/grant.js';
import type { GrantQuestion } from '../grants/match.js';
import type { GrantLineSender } from '../relay/grantAnswerer.js';
import { grantRef } from '../relay/grantAnswerer.js';
import type { ApprovalRecord } from '../store/record.js';
import type { SlackNoticeSender } from './slackNotices.js';

/** Posts the line a grant's use leaves in the approval's channel, naming (not pinging) the granter. */
export class SlackGrantLines implements GrantLineSender {
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
}
