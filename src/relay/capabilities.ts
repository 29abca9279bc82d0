import type { ApprovalSubject } from '../msp/protocol.js';

/**
 * Canonical capability strings for a subject (DESIGN §4). An unknown kind yields none: such a
 * request is never grantable, so nothing may ever match it.
 */
export function requiredCapabilities(subject: ApprovalSubject, tool: string): string[] {
  switch (subject.kind) {
    case 'shell':
      return (subject.stages ?? []).map((stage) => `exec:${stage.argv.join(' ')}`);
    case 'fileAccess': {
      const access = subject.access === 'read' ? 'file-read' : 'file-write';
      return subject.path ? [`${access}:${subject.path}`] : [];
    }
    case 'network': {
      if (!subject.host) return [];
      const protocol = subject.protocol ?? 'tcp';
      const port = subject.port === undefined ? '' : `:${subject.port}`;
      return [`net-connect:${protocol}://${subject.host}${port}`];
    }
    case 'process':
      return subject.target ? [`process:${subject.target}`] : [];
    case 'unixSocket': {
      const path = subject.path ?? subject.target;
      return path ? [`unix-socket:${path}`] : [];
    }
    case 'tool':
      return [`tool:${subject.toolName ?? tool}`];
    default:
      return [];
  }
}
