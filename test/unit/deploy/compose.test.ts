// docker-compose.yml: the bot gets only variables it reads, Compose itself refuses to start without
// the ones the bot cannot start without, the bot's Redis is the Compose Redis, and that Redis is
// pinned, persistent, password-protected and healthy before the bot starts. The MSP host runs in a
// service of its own, as another user, without .env, on a socket the bot's host command connects
// to (test/unit/msp/socketBridge.test.ts runs that bridge). No Docker here: the file is parsed
// (yaml) and interpolated as Compose would, with .env.example filled in as the .env.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../support/bot.js';
import { botVariables, loadObserved } from '../../support/botVariables.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';

interface Service {
  build?: unknown;
  image?: string;
  restart?: string;
  user?: string;
  group_add?: Array<string | number>;
  command?: string[];
  environment?: Record<string, string | null> | string[];
  env_file?: Array<string | { path: string; required?: boolean }>;
  depends_on?: Record<string, { condition?: string }> | string[];
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test?: string[] | string };
  networks?: string[] | Record<string, unknown>;
  cap_drop?: string[];
  security_opt?: string[];
  read_only?: boolean;
  tmpfs?: string[] | string;
}

/** What an operator puts in .env as REDIS_PASSWORD (hex, as `openssl rand -hex 32` prints). */
const COMPOSE_REDIS_PASSWORD = '5f1c0e2a9b7d4c3e8a6f0b1d2c4e6a8b';

const composeText = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText) as {
  services: Record<string, Service>;
  volumes?: Record<string, { driver_opts?: Record<string, string> } | null>;
  networks?: Record<string, { internal?: boolean } | null>;
};
const [botName, bot] = Object.entries(compose.services).find(([, s]) => s.build !== undefined) ?? [];
const [redisName, redis] =
  Object.entries(compose.services).find(([, s]) => s.image?.startsWith('redis:')) ?? [];
const host = compose.services['msp-host'];

/** The bot's image's user (the Dockerfile's USER node), which Compose runs it as. */
const BOT_UID = 1000;

/** The networks a service joins, list or mapping form: Compose's `default` when it names none. */
function networksOf(service: Service): string[] {
  const networks = service.networks ?? ['default'];
  return Array.isArray(networks) ? networks : Object.keys(networks);
}

/** The service's `environment` as written, list or mapping form. */
function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env))
    return Object.fromEntries(env.map((e) => [e.split('=')[0]!, e.slice(e.indexOf('=') + 1)]));
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v ?? '']));
}

/**
 * Compose's interpolation of one value from `dotenv`: ${X}, ${X:-default}, ${X-default},
 * ${X:?error}, ${X?error}, and $$. Throws the error Compose would print for a missing required one.
 */
function interpolate(value: string, dotenv: Record<string, string>): string {
  return value.replace(/\$\$|\$\{(\w+)(?:(:?)([-?])([^}]*))?\}/g, (whole, name, colon, op, arg) => {
    if (whole === '$$') return '$';
    const set = dotenv[name] !== undefined && (colon !== ':' || dotenv[name] !== '');
    if (set) return dotenv[name]!;
    if (op === '?') throw new Error(`required variable ${name} is missing a value: ${arg}`);
    return op === '-' ? arg : '';
  });
}

/** .env.example as it is: its `NAME=value` lines, quotes removed. */
function exampleAsWritten(): Record<string, string> {
  const text = readFileSync(join(PROJECT_ROOT, '.env.example'), 'utf8');
  const pairs = [...text.matchAll(/^([A-Z0-9_]+)=(.*)$/gm)].map(([, name, raw]) => [
    name!,
    raw!.trim().replace(/^(['"])(.*)\1$/, '$2'),
  ]);
  return Object.fromEntries(pairs);
}

/** .env.example as a .env: tokens and the Redis password filled in. */
function exampleDotenv(): Record<string, string> {
  return {
    ...exampleAsWritten(),
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
    REDIS_PASSWORD: COMPOSE_REDIS_PASSWORD,
    MSP_HOST_IMAGE: 'registry.example.com/msp-host-muse:0.1.0',
  };
}

/** Every string of `node` (a service, the whole file) interpolated: throws as Compose would. */
function interpolated<T>(node: T, dotenv: Record<string, string>): T {
  if (typeof node === 'string') return interpolate(node, dotenv) as T;
  if (Array.isArray(node)) return node.map((item) => interpolated(item, dotenv)) as T;
  if (node !== null && typeof node === 'object')
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [key, interpolated(value, dotenv)]),
    ) as T;
  return node;
}

/** The bot container's environment: .env (env_file), overridden by `environment`, interpolated. */
function botEnvironment(dotenv: Record<string, string>): Record<string, string> {
  const fromFile = (bot?.env_file ?? []).some((f) => (typeof f === 'string' ? f : f.path) === '.env')
    ? dotenv
    : {};
  const written = Object.entries(environmentOf(bot!)).map(([k, v]) => [k, interpolate(v, dotenv)]);
  return { ...fromFile, ...Object.fromEntries(written) };
}

describe('docker-compose.yml', () => {
  it('has the bot (built from this repository) and a Redis', () => {
    expect(botName).toBeDefined();
    expect(redisName).toBeDefined();
  });

  it('sets only variables the bot reads', () => {
    const names = Object.keys(environmentOf(bot!));
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !botVariables().has(name))).toEqual([]);
  });

  it('with .env filled in from .env.example, gives the bot a Socket Mode configuration on the Compose Redis', () => {
    const { config } = loadObserved(botEnvironment(exampleDotenv()));
    expect(config.slack.mode).toBe('socket');
    expect(config.redis.kind).toBe('single');
    const url = new URL(config.redis.kind === 'single' ? config.redis.url : '');
    expect(url.hostname).toBe(redisName);
    expect(url.port || '6379').toBe('6379');
  });

  it('makes Compose refuse to start, naming it, without any variable the bot cannot start without', () => {
    const dotenv = exampleDotenv();
    const full = botEnvironment(dotenv);
    // What the bot needs, by its own loader: each variable whose absence stops its start-up.
    const required = [...botVariables()].filter((name) => {
      try {
        loadObserved({ ...full, [name]: '' });
        return false;
      } catch {
        return true;
      }
    });
    expect(required).toContain('SLACK_BOT_TOKEN');
    expect(required).toContain('SLACK_APP_TOKEN');
    for (const name of required) {
      let env: Record<string, string>;
      try {
        env = botEnvironment({ ...dotenv, [name]: '' });
      } catch (error) {
        expect((error as Error).message, name).toMatch(
          new RegExp(`^required variable ${name} is missing a value: set ${name} in .env`),
        );
        continue;
      }
      // Or Compose gives it to the bot itself, not from .env (MSP_HOST_COMMAND, the bridge;
      // REDIS_URL, written from REDIS_PASSWORD): the bot starts without it there.
      expect(() => loadObserved(env), `${name}: Compose neither refuses nor sets it`).not.toThrow();
    }
  });

  it('publishes PORT and METRICS_PORT, where /metrics is, on this machine only', () => {
    const published = (bot!.ports ?? []).map((mapping) => {
      const [address, hostPort, containerPort, ...rest] = mapping.split(':');
      expect(rest, mapping).toEqual([]);
      return { address, hostPort: Number(hostPort), containerPort: Number(containerPort) };
    });
    for (const dotenv of [exampleDotenv(), { ...exampleDotenv(), METRICS_PORT: '9999' }]) {
      // PORT never serves /metrics: METRICS_PORT does, and .env cannot move it off the published port.
      const { config } = loadObserved(botEnvironment(dotenv));
      expect(config.metricsPort).toBeDefined();
      expect(published.map((p) => p.containerPort).sort()).toEqual([config.port, config.metricsPort].sort());
    }
    for (const { address, hostPort, containerPort } of published) {
      expect(address).toBe('127.0.0.1');
      expect(hostPort).toBe(containerPort);
    }
  });

  it('starts the bot once its Redis is healthy, and restarts both', () => {
    const dependsOn = bot!.depends_on as Record<string, { condition?: string }>;
    expect(dependsOn[redisName!]?.condition).toBe('service_healthy');
    expect([redis!.healthcheck?.test].flat().join(' ')).toMatch(/redis-cli.*ping/);
    for (const service of [bot!, redis!])
      expect(service.restart).toMatch(/^(always|unless-stopped|on-failure)/);
  });

  it('starts Redis with the password of .env, and Compose refuses to start without one', () => {
    const dotenv = exampleDotenv();
    const command = interpolated(redis!.command ?? [], dotenv);
    expect(command[command.indexOf('--requirepass') + 1]).toBe(COMPOSE_REDIS_PASSWORD);
    // No default anywhere in the file: each use of it stops Compose, naming it.
    const uses = [...composeText.matchAll(/\$\{REDIS_PASSWORD\b[^}]*\}/g)].map((m) => m[0]);
    expect(uses.length).toBeGreaterThanOrEqual(2);
    const missing = /^required variable REDIS_PASSWORD is missing a value: set REDIS_PASSWORD in .env/;
    for (const use of uses)
      expect(() => interpolate(use, { ...dotenv, REDIS_PASSWORD: '' })).toThrow(missing);
    expect(exampleAsWritten().REDIS_PASSWORD, '.env.example names it, empty').toBe('');
  });

  it('gives the bot that password in REDIS_URL, not as REDIS_PASSWORD, which it refuses beside REDIS_URL', () => {
    const env = botEnvironment(exampleDotenv());
    expect(env.REDIS_PASSWORD ?? '').toBe('');
    const { config } = loadObserved(env);
    const url = new URL(config.redis.kind === 'single' ? config.redis.url : '');
    expect(decodeURIComponent(url.password)).toBe(COMPOSE_REDIS_PASSWORD);
  });

  it('health-checks Redis with the password, healthy on PONG only (redis-cli exits 0 on NOAUTH too)', () => {
    const dotenv = exampleDotenv();
    const service = interpolated(redis!, dotenv);
    const test = [service.healthcheck?.test].flat().join(' ');
    const auth = environmentOf(service).REDISCLI_AUTH ?? /-a (\S+)/.exec(test)?.[1]?.replace(/^"|"$/g, '');
    expect(auth).toBe(COMPOSE_REDIS_PASSWORD);
    expect(test).toMatch(/redis-cli.*ping/);
    expect(test).toMatch(/PONG/);
  });

  it('runs a pinned Redis release that keeps its data in a volume', () => {
    expect(redis!.image).toMatch(/^redis:\d+\.\d+\.\d+(?:-[a-z]+)?(?:@sha256:[0-9a-f]{64})?$/);
    expect(redis!.volumes?.some((v) => /^[\w-]+:\/data$/.test(v))).toBe(true);
    expect(redis!.command?.join(' ')).toMatch(/--appendonly yes|--save /);
  });

  // Redis' link is plain redis://: on a bridge the bot's host could reach, an agent (root after
  // any setuid path, with Docker's NET_RAW) could ARP-spoof it and read AUTH.
  it('keeps Redis on an internal network, which only the bot shares, and every network declared', () => {
    const [redisNetwork, ...more] = networksOf(redis!);
    expect(more, 'Redis joins one network').toEqual([]);
    expect(redisNetwork).not.toBe('default');
    expect(compose.networks?.[redisNetwork!]?.internal, `${redisNetwork} is internal`).toBe(true);
    const sharing = Object.entries(compose.services)
      .filter(([, service]) => networksOf(service).includes(redisNetwork!))
      .map(([name]) => name)
      .sort();
    expect(sharing).toEqual([botName, redisName].sort());
    // The bot reaches Slack through another network than Redis'.
    expect(networksOf(bot!).some((n) => n !== redisNetwork && !compose.networks?.[n]?.internal)).toBe(true);
    for (const service of Object.values(compose.services))
      for (const network of networksOf(service))
        if (network !== 'default') expect(Object.keys(compose.networks ?? {})).toContain(network);
  });

  it('runs the bot without capabilities or a way to gain privileges, on a read-only root filesystem', () => {
    expect(bot!.cap_drop).toEqual(['ALL']);
    expect(bot!.security_opt).toContain('no-new-privileges:true');
    expect(bot!.read_only).toBe(true);
    expect([bot!.tmpfs ?? []].flat()).toContain('/tmp');
  });

  describe('the MSP host', () => {
    /** The names a service's text interpolates from .env. */
    const interpolatedNames = (service: Service) =>
      new Set([...JSON.stringify(service).matchAll(/\$\{(\w+)/g)].map((m) => m[1]!));
    /** The host service's listener argument, interpolated. */
    const listenArg = () =>
      interpolated(host!.command ?? [], exampleDotenv()).find((arg) => arg.startsWith('UNIX-LISTEN:'));
    const socketOf = (command: string) => /\bUNIX-CONNECT:([^\s,]+)/.exec(command)?.[1];

    // As the bot's user, in the bot's container, the agent could read the bot's
    // /proc/<pid>/environ (the tokens, REDIS_URL with its password) and write itself a grant.
    it('runs in a service of its own, as another user than the bot’s, without .env or any secret of it', () => {
      expect(host, 'a service msp-host').toBeDefined();
      const [uid, gid] = (host!.user ?? '').split(':');
      expect(Number(uid), 'a numeric uid, not root').toBeGreaterThan(0);
      expect(Number(uid)).not.toBe(BOT_UID);
      expect(Number(gid)).toBeGreaterThan(0);
      expect(bot!.user ?? `${BOT_UID}`).not.toBe(host!.user);
      const files = (host!.env_file ?? []).map((f) => (typeof f === 'string' ? f : f.path));
      expect(files).not.toContain('.env');
      expect(Object.keys(environmentOf(host!)).filter((name) => botVariables().has(name))).toEqual([]);
      // From .env it takes its image and its command line only, never a token or a password.
      expect([...interpolatedNames(host!)].sort()).toEqual(['MSP_HOST_COMMAND', 'MSP_HOST_IMAGE']);
    });

    // The bot reaches it through the socket's volume only: on a network of the bot's or Redis',
    // the agent could open redis:6379, read the bot's METRICS_PORT, or spoof their traffic.
    it('shares no network with Redis or the bot', () => {
      const hostNetworks = networksOf(host!);
      expect(hostNetworks.length).toBeGreaterThan(0);
      for (const other of [bot!, redis!])
        expect(networksOf(other).filter((n) => hostNetworks.includes(n))).toEqual([]);
    });

    it('runs without capabilities or a way to gain privileges (no-new-privileges), root filesystem read-only', () => {
      expect(host!.cap_drop).toEqual(['ALL']);
      expect(host!.security_opt).toContain('no-new-privileges:true');
      expect(host!.read_only).toBe(true);
      // HOME, below, is there.
      expect([host!.tmpfs ?? []].flat()).toContain('/tmp');
    });

    it('listens on the socket the bot’s host command connects to, on a volume both mount, that only they may open', () => {
      const socket = socketOf(botEnvironment(exampleDotenv()).MSP_HOST_COMMAND ?? '');
      expect(socket, 'the bot’s MSP_HOST_COMMAND is a bridge to a Unix socket').toBeDefined();
      expect(listenArg()?.split(',')[0]).toBe(`UNIX-LISTEN:${socket}`);
      const volumeAt = (service: Service) =>
        service.volumes?.find((v) => v.endsWith(`:${dirname(socket!)}`))?.split(':')[0];
      const volume = volumeAt(bot!);
      expect(volume, 'the bot mounts the socket’s directory').toBeDefined();
      expect(volumeAt(host!)).toBe(volume);
      // The socket is mode 660, of the host's group, which the bot is given.
      expect(listenArg()).toMatch(/,mode=660\b/);
      const hostGroup = (host!.user ?? '').split(':')[1];
      expect((bot!.group_add ?? []).map(String)).toContain(hostGroup);
      expect(compose.volumes?.[volume!]?.driver_opts?.o).toMatch(new RegExp(`\\bgid=${hostGroup}\\b`));
    });

    // As uid 1001 with no passwd entry in the host's image, Docker sets HOME=/, which only root
    // may write: an agent writing ~/.config or a cache would fail. Kubernetes sets HOME=/tmp too.
    it('gives the agent a home it may write', () => {
      expect(environmentOf(host!).HOME).toBe('/tmp');
    });

    it('is the bridge deploy/kubernetes runs, so the bridge test covers both', () => {
      const base = parse(
        readFileSync(join(PROJECT_ROOT, 'deploy', 'kubernetes', 'base', 'countersign.yml'), 'utf8'),
      ) as { hosts: Array<{ command: string }> };
      expect(botEnvironment(exampleDotenv()).MSP_HOST_COMMAND).toBe(base.hosts[0]!.command);
    });

    it('runs .env’s MSP_HOST_COMMAND, through socat, and Compose refuses to start without it or the image', () => {
      const dotenv = exampleDotenv();
      const command = interpolated(host!.command ?? [], dotenv);
      expect(command[0]).toBe('socat');
      expect(command.at(-1)).toBe('EXEC:muse serve');
      for (const name of ['MSP_HOST_COMMAND', 'MSP_HOST_IMAGE']) {
        expect(() => interpolated(host!, { ...dotenv, [name]: '' }), name).toThrow(
          new RegExp(`^required variable ${name} is missing a value: set ${name} in .env`),
        );
      }
      expect(exampleAsWritten().MSP_HOST_IMAGE, '.env.example names it, empty').toBe('');
      expect(host!.restart).toMatch(/^(always|unless-stopped|on-failure)/);
    });
  });
});
