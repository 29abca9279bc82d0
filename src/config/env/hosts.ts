// Where the MSP hosts come from: the config file's `hosts`, or MSP_HOST_COMMAND as the one host.

import type { HostSpec } from '../../domain/route.js';
import { ConfigError } from '../common.js';
import { DEFAULTS } from '../defaults.js';
import { read, required } from './read.js';

/** The file's hosts, or MSP_HOST_COMMAND as the one host: never both, never neither. */
export function hostsOf(
  env: NodeJS.ProcessEnv,
  configPath: string | undefined,
  fileHosts: HostSpec[] | undefined,
  sandboxMode: string,
): HostSpec[] {
  const command = read(env, 'MSP_HOST_COMMAND');
  if (fileHosts) {
    if (command !== undefined) {
      throw new ConfigError(
        'MSP_HOST_COMMAND',
        `MSP_HOST_COMMAND is set and COUNTERSIGN_CONFIG (${configPath}) lists hosts: unset MSP_HOST_COMMAND, or remove hosts from the file`,
      );
    }
    return fileHosts;
  }
  const hostCommand = required(
    env,
    'MSP_HOST_COMMAND',
    'set it to the command line that starts an MSP host speaking NDJSON on stdio (run through /bin/sh -c), or list hosts in COUNTERSIGN_CONFIG',
  );
  return [{ id: DEFAULTS.hostId, command: hostCommand, sandboxMode }];
}
