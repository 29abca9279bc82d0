import {
  APPROVAL_NOTIFICATIONS,
  approvalEventFromNotification,
  parseApprovalRequest,
} from './approvalEvents.js';
import type { IncomingRequest } from './connection.js';
import { MspError } from './errors.js';
import type { HostEvent } from './events.js';
import type { Incarnation } from './incarnation.js';
import { preview, previewId } from './jsonRpc.js';

// What a host incarnation sends on its own (hostSupervisor.ts): approval/request and the
// approval notifications become HostEvents; session notifications go to its SessionFollower.

export function handleHostRequest(
  hostId: string,
  incarnation: Incarnation,
  request: IncomingRequest,
  emit: (event: HostEvent) => void,
): unknown {
  if (request.method === 'approval/request') {
    const params = parseApprovalRequest(request.params, request.method, incarnation.frameWarnings);
    if (params === undefined) {
      // Logged and skipped. The receipt would say a surface shows it; an error leaves the
      // approval pending and has it re-issued on the next subscribe (§5.1 RequestReceipt).
      request.respondError(MspError.invalidParams('approval/request params do not parse'));
      return undefined;
    }
    // §5.1: the receipt goes out before the approval is handed on; it is not a decision.
    request.respond({});
    incarnation.logger.info(
      { approvalId: params.approvalId, sessionId: params.sessionId },
      'approval requested',
    );
    emit({
      type: 'approvalOpened',
      hostId: hostId,
      incarnation: incarnation.id,
      via: 'request',
      params,
    });
    return undefined;
  }
  // userInput/request cannot come (userInputDialogs: false); if it does, we cannot show it.
  // As many as the host sends: counted past a few a minute (Incarnation.frameWarnings).
  incarnation.frameWarnings.warn(
    { method: preview(request.method), id: previewId(request.id) },
    'refusing host request we do not serve',
  );
  throw MspError.methodNotFound(request.method);
}

export function handleHostNotification(
  hostId: string,
  incarnation: Incarnation,
  method: string,
  params: unknown,
  emit: (event: HostEvent) => void,
): void {
  if (APPROVAL_NOTIFICATIONS.has(method)) {
    const event = approvalEventFromNotification(
      method,
      params,
      { hostId: hostId, incarnation: incarnation.id },
      incarnation.frameWarnings,
    );
    if (event === undefined) return;
    if ('params' in event) {
      // The relay logs what it does with the event at info; this line is for tracing the wire.
      incarnation.logger.debug(
        { approvalId: event.params.approvalId, sessionId: event.params.sessionId, method },
        'approval event',
      );
    }
    emit(event);
    return;
  }
  if (incarnation.follower?.handleNotification(method, params)) return;
  incarnation.logger.debug({ method: preview(method) }, 'ignoring notification');
}
