import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { hostEnvironment, withheldSettings } from '../config/hostEnvironment.js';
import { HostFleet } from '../msp/hostFleet.js';
import { HostSupervisor } from '../msp/hostSupervisor.js';
import type { HostEventHandler } from '../relay/hostEvents/hostEventHandler.js';
import type { FenceBook } from '../replicas/fenceBook.js';
import type { RedisClient } from '../store/redisConnection.js';
import { RedisSessionMemory } from '../store/sessionMemory.js';
import { VERSION } from '../version.js';
import type { Late } from './late.js';

export interface HostsNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  /** A host runs only while this replica holds its lease. */
  fences: FenceBook;
  /** Where a host's events go: the HostEventHandler, built on top of the hosts (hostEvents.ts). */
  relay: Late<HostEventHandler>;
}

/** The MSP hosts this replica may run, each supervised on its own. */
export function wireHosts({ config, logger, redis, fences, relay }: HostsNeeds) {
  // Each host is supervised on its own. A host's events reach the HostEventHandler, wired after the
  // hosts: none arrive before hosts.run(), which the lease owner calls once running.
  const sessionMemory = new RedisSessionMemory(redis);
  // loadConfig refuses MSP_HOST_COMMAND together with the file's hosts: without it, the hosts
  // come from the file, and a failing one is named by its place there.
  const hostsFromFile = !process.env.MSP_HOST_COMMAND?.trim();
  // No host inherits the bot's own settings (its tokens, secrets, Redis URL): the agent it runs
  // could read them. Names only: the values are secrets.
  logger.info({ withheld: withheldSettings(process.env) }, "the bot's settings are withheld from the hosts");
  return new HostFleet({
    hostIds: config.msp.hosts.map((spec) => spec.id),
    mayAct: (hostId) => fences.holds(hostId),
    create: (hostId) => {
      const i = config.msp.hosts.findIndex((spec) => spec.id === hostId);
      const spec = config.msp.hosts[i]!;
      return new HostSupervisor({
        hostId: spec.id,
        command: spec.command,
        ...(hostsFromFile ? { commandSetting: `COUNTERSIGN_CONFIG hosts[${i}].command` } : {}),
        ...(spec.cwd ? { cwd: spec.cwd } : {}),
        env: hostEnvironment(process.env, spec.env),
        logger: logger.child({ hostId: spec.id }),
        clientVersion: VERSION,
        onEvent: (event) => relay.get().handleHostEvent(event),
        sessionMemory,
        decideTimeoutMs: config.msp.requestTimeoutMs,
        requestTimeoutMs: config.msp.requestTimeoutMs,
      });
    },
  });
}
