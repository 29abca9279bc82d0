import type { Logger } from 'pino';
import type { JsonRpcConnection } from './connection.js';
import { InitializeResult, isDurable, KNOWN_SCHEMA_FINGERPRINTS } from './protocol.js';

// initialize → result → initialized (docs/msp-approvals.md §2). Capabilities are fixed for the
// connection's life, so everything the bot needs is asked for here.

export interface HandshakeOutcome {
  result: InitializeResult;
  /** Absent or "durable" → durable; an unknown value counts as not durable (§2). */
  durable: boolean;
}

export function buildInitializeParams(clientVersion: string): Record<string, unknown> {
  return {
    // clientInfo.name must match [a-z0-9_]+; it is attribution only, never authority.
    clientInfo: { name: 'countersign', title: 'Countersign', version: clientVersion },
    capabilities: {
      requestedCapabilities: ['sessionListStream'],
      // Streaming text is of no use to an approval bot and only costs bandwidth.
      optOutNotificationMethods: ['item/delta'],
      // We cannot show user-input prompts; the host withholds userInput/request then.
      userInputDialogs: false,
    },
  };
}

export async function performHandshake(
  connection: JsonRpcConnection,
  options: { clientVersion: string; logger: Logger; timeoutMs?: number },
): Promise<HandshakeOutcome> {
  const raw = await connection.request('initialize', buildInitializeParams(options.clientVersion), {
    timeoutMs: options.timeoutMs,
  });
  const parsed = InitializeResult.safeParse(raw);
  if (!parsed.success) throw new Error('initialize result does not parse');
  const result = parsed.data;
  connection.notify('initialized');

  const fingerprint = result.schema?.fingerprint;
  if (fingerprint !== undefined && !KNOWN_SCHEMA_FINGERPRINTS.has(fingerprint)) {
    // A mismatch is a warning, not an error (§2): parsing is lenient anyway.
    options.logger.warn({ fingerprint }, 'host speaks an MSP schema this client was not written against');
  }
  const durable = isDurable(result.sessionDurability);
  options.logger.info(
    {
      serverInfo: result.serverInfo,
      sessionDurability: result.sessionDurability ?? 'durable',
      durable,
      grantedCapabilities: result.grantedCapabilities,
      fingerprint,
    },
    'MSP handshake done',
  );
  if (!result.grantedCapabilities.includes('sessionListStream')) {
    options.logger.info(
      'sessionListStream not granted; following sessions through session/started and statusChanged',
    );
  }
  return { result, durable };
}
