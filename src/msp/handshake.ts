import type { Logger } from 'pino';
import type { JsonRpcConnection } from './connection.js';
import { preview } from './jsonRpc.js';
import { InitializeResult, isDurable, KNOWN_SCHEMA_FINGERPRINTS } from './protocol.js';

// initialize → result → initialized (docs/msp-approvals.md §2). Capabilities are fixed for the
// connection's life, so everything the bot needs is asked for here.

export interface HandshakeOutcome {
  result: InitializeResult;
  /** Absent or "durable" → durable; an unknown value counts as not durable (§2). */
  durable: boolean;
}

/**
 * The capabilities named in the log line: we ask for one, so a host granting more than a few is
 * granting what nobody asked for, and a list of thousands says no more than its start.
 */
const MAX_LOGGED_CAPABILITIES = 20;

/**
 * What the host says of itself, for the log: its words masked and cut like a frame (jsonRpc.ts),
 * and no field of serverInfo but its name and version. A host chooses all of it, a megabyte of
 * name and version included, and each start of the host logs it again.
 */
function loggedHandshake(result: InitializeResult): Record<string, unknown> {
  const { serverInfo, sessionDurability, grantedCapabilities, schema } = result;
  return {
    serverInfo: serverInfo && { name: preview(serverInfo.name), version: preview(serverInfo.version) },
    sessionDurability: preview(sessionDurability ?? 'durable'),
    grantedCapabilities: grantedCapabilities.slice(0, MAX_LOGGED_CAPABILITIES).map(preview),
    ...(grantedCapabilities.length > MAX_LOGGED_CAPABILITIES
      ? { grantedCapabilityCount: grantedCapabilities.length }
      : {}),
    fingerprint: schema && preview(schema.fingerprint),
  };
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
    options.logger.warn(
      { fingerprint: preview(fingerprint) },
      'host speaks an MSP schema this client was not written against',
    );
  }
  const durable = isDurable(result.sessionDurability);
  options.logger.info({ ...loggedHandshake(result), durable }, 'MSP handshake done');
  if (!result.grantedCapabilities.includes('sessionListStream')) {
    options.logger.info(
      'sessionListStream not granted; following sessions through session/started and statusChanged',
    );
  }
  return { result, durable };
}
