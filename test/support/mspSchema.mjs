// Checks MSP frames against the vendor's own JSON Schema (test/fixtures/msp-schema/, see its
// SOURCE.md), so that the end-to-end tests hold the bot and our fake host to something nobody here
// wrote. Plain Node ESM (the fake host, a plain .mjs process, loads it too); types in
// mspSchema.d.mts.
//
// How the vendored bundle describes frames, and how each frame is checked against it:
// - the envelope: `$defs/Request`, `$defs/Notification`, `$defs/SuccessResponse` and
//   `$defs/ErrorResponse` (whose `error` is `$defs/ErrorObject`, `data` `$defs/ErrorData`);
// - `methods[m]`: requests the client sends, with `params` and `result`;
// - `requests[m]`: requests the server sends (approval/request, userInput/request), with
//   `params` and `result` (the client's presentation receipt);
// - `notifications[m]`: notifications with `params`; only `initialized` goes client → server.
// A request's params are checked by its method, a response's result by the method of the request
// it answers (each direction's in-flight ids are tracked, as each direction owns its id space),
// a notification's params by its method, an error response by the error shape.
//
// Unknown methods: the protocol is open, so a notification or request the host sends with a
// method the schema does not know is allowed (a client must skip, or refuse with -32601, what it
// does not know; the vendor's tolerance transcripts send such frames on purpose). Only its
// envelope is checked. A frame the client sends with an unknown method is a client bug: the bot
// must only call what the protocol defines.
//
// Two changes to the vendored schema, made here at load time (the file stays byte for byte):
// - Open enums: a definition marked `x-msp-openness: open` has its `enum` dropped, keeping its
//   `type`. The vendor's rule is that a reader accepts values it does not know in an open
//   vocabulary (a newer host may send them), so the test must not reject what the bot must
//   accept. Closed enums (`x-msp-openness: closed`) stay as they are.
// - `approval/reviewing`: the notification is part of the protocol as the project specifies it
//   (docs/msp-approvals.md §4.2: params are the full `ApprovalRequestParams`), but the vendored
//   experimental bundle does not list it. It is added to the notification table below
//   (LOCAL_NOTIFICATIONS), so that its params are checked rather than passed as "unknown".

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const SCHEMA_URL = new URL('../fixtures/msp-schema/msp.schema.json', import.meta.url);

/** Notifications the project's specification defines beyond the vendored bundle (see above). */
export const LOCAL_NOTIFICATIONS = Object.freeze({
  'approval/reviewing': { params: { $ref: '#/$defs/ApprovalRequestParams' } },
});

/** The only notification a client sends (the vendored bundle: "Client-to-server notification"). */
const CLIENT_NOTIFICATIONS = new Set(['initialized']);

/** Drops `enum` from every definition marked open; returns how many it opened. */
function openEnums(node) {
  let opened = 0;
  if (Array.isArray(node)) {
    for (const item of node) opened += openEnums(item);
    return opened;
  }
  if (node === null || typeof node !== 'object') return 0;
  if (node['x-msp-openness'] === 'open' && Array.isArray(node.enum)) {
    delete node.enum;
    opened += 1;
  }
  for (const value of Object.values(node)) opened += openEnums(value);
  return opened;
}

/**
 * Drops the `description` annotations (prose; a property that happens to be named
 * "description" is a schema object and stays): they change nothing about what validates, and
 * would make the generated validators several times larger.
 */
function dropDescriptions(node) {
  if (Array.isArray(node)) {
    for (const item of node) dropDescriptions(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (typeof node.description === 'string') delete node.description;
  for (const value of Object.values(node)) dropDescriptions(value);
}

function defName(ref) {
  const match = /^#\/\$defs\/([^/]+)$/.exec(ref?.$ref ?? '');
  if (!match) throw new Error(`mspSchema: unexpected reference ${JSON.stringify(ref)}`);
  return match[1];
}

/**
 * Validators for every definition, compiled by ajv (draft 2020-12) to standalone code once per
 * schema version and cached in the temp directory: compiling the whole bundle takes most of a
 * second, and each fake host process (one per host start or restart in the e2e tests) would pay
 * it again; importing the cached module takes tens of milliseconds. Returns the module's path.
 */
async function validatorsFile(schemaText, vendored) {
  const require = createRequire(import.meta.url);
  const ajvVersion = require('ajv/package.json').version;
  // Keyed by everything that shapes the code: this file (its load-time changes), ajv, the schema.
  const key = createHash('sha256')
    .update(readFileSync(new URL(import.meta.url)))
    .update(`\0${ajvVersion}\0`)
    .update(schemaText)
    .digest('hex')
    .slice(0, 24);
  const dir = join(tmpdir(), 'countersign-msp-schema');
  const file = join(dir, `validators-${key}.mjs`);
  if (existsSync(file)) return file;

  const defs = structuredClone(vendored.$defs);
  const openedEnums = openEnums(defs);
  dropDescriptions(defs);
  const { default: Ajv2020 } = await import('ajv/dist/2020.js');
  const { default: standaloneCode } = await import('ajv/dist/standalone/index.js');
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    strictTypes: false,
    code: { source: true, esm: true },
  });
  for (const keyword of ['x-msp-openness', 'x-msp-descriptor', 'x-msp-stability']) {
    ajv.addKeyword({ keyword, schemaType: 'string' });
  }
  ajv.addSchema({ $id: 'msp', $defs: defs });
  const exports = Object.fromEntries(Object.keys(defs).map((name) => [name, `msp#/$defs/${name}`]));
  let code = standaloneCode(ajv, exports);
  // Runtime helpers the generated code may import are resolved from here, not from the temp dir.
  code = code.replace(/(["'])(ajv\/dist\/runtime\/[^"']+)\1/g, (_m, _q, spec) =>
    JSON.stringify(pathToFileURL(require.resolve(spec)).href),
  );
  code += `\nexport const __openedEnums = ${openedEnums};\n`;
  mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, code);
  renameSync(tmp, file);
  return file;
}

function readSchema() {
  const schemaText = readFileSync(SCHEMA_URL, 'utf8');
  return { schemaText, vendored: JSON.parse(schemaText) };
}

/**
 * Makes sure the cached validators exist, without loading them: for a process that starts fake
 * hosts (which load them) but checks nothing itself. Under vitest, importing the generated module
 * goes through its transform, which costs a second or two per worker.
 */
export async function prepareMspSchema() {
  const { schemaText, vendored } = readSchema();
  await validatorsFile(schemaText, vendored);
}

let loading;

/**
 * The vendored schema, parsed and adjusted, with a validator for each of its definitions.
 * Loaded once per process.
 */
export function loadMspSchema() {
  loading ??= load();
  return loading;
}

async function load() {
  const { schemaText, vendored } = readSchema();
  const validators = await import(pathToFileURL(await validatorsFile(schemaText, vendored)).href);
  const table = (entries) =>
    Object.fromEntries(
      Object.entries(entries).map(([method, spec]) => [
        method,
        {
          params: spec.params ? defName(spec.params) : undefined,
          result: spec.result ? defName(spec.result) : undefined,
        },
      ]),
    );
  return {
    vendored,
    openedEnums: validators.__openedEnums,
    /** Client → server requests. */
    methods: table(vendored.methods),
    /** Server → client requests. */
    requests: table(vendored.requests),
    notifications: table({ ...vendored.notifications, ...LOCAL_NOTIFICATIONS }),
    /** Errors of `value` against `$defs/<name>`, as readable lines; empty when it conforms. */
    check(name, value, label = name) {
      const validate = validators[name];
      if (!validate) throw new Error(`mspSchema: no definition ${name}`);
      if (validate(value)) return [];
      return (validate.errors ?? []).map((e) => `${label} ${e.instancePath || '(top)'}: ${e.message}`);
    },
  };
}

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function idKey(id) {
  return `${typeof id}:${String(id)}`;
}

/**
 * A checker for one connection (one host process and the bot talking to it). `direction` is who
 * wrote the frame: `client` (the bot) or `server` (the host). Returns the reasons the frame does
 * not conform, empty when it does. Call it for every frame of the connection in the order each
 * side wrote them, requests before the responses that answer them.
 */
export async function createFrameValidator() {
  const schema = await loadMspSchema();
  /** In-flight requests by id, per direction of the request. */
  const inFlight = { client: new Map(), server: new Map() };

  function validate(frame, direction) {
    if (direction !== 'client' && direction !== 'server') throw new Error(`bad direction ${direction}`);
    const other = direction === 'client' ? 'server' : 'client';
    if (typeof frame === 'string') {
      try {
        frame = JSON.parse(frame);
      } catch {
        return ['not JSON'];
      }
    }
    if (!isPlainObject(frame)) return ['not a JSON object'];

    if (typeof frame.method === 'string') {
      const { method } = frame;
      if ('id' in frame) {
        const errors = schema.check('Request', frame, `${method} request`);
        const table = direction === 'client' ? schema.methods : schema.requests;
        const spec = Object.hasOwn(table, method) ? table[method] : undefined;
        if (frame.id !== undefined && frame.id !== null) inFlight[direction].set(idKey(frame.id), method);
        if (!spec) {
          if (direction === 'client') errors.push(`${method}: not a method a client may call`);
          return errors;
        }
        if (spec.params) errors.push(...schema.check(spec.params, frame.params ?? {}, `${method} params`));
        return errors;
      }
      const errors = schema.check('Notification', frame, `${method} notification`);
      const known = Object.hasOwn(schema.notifications, method);
      if (direction === 'client') {
        if (!CLIENT_NOTIFICATIONS.has(method)) errors.push(`${method}: not a notification a client sends`);
      } else if (CLIENT_NOTIFICATIONS.has(method)) {
        errors.push(`${method}: a client-to-server notification, sent by the server`);
      }
      const spec = known ? schema.notifications[method] : undefined;
      if (spec?.params) {
        errors.push(...schema.check(spec.params, frame.params ?? {}, `${method} params`));
      }
      return errors;
    }

    const hasResult = 'result' in frame;
    const hasError = 'error' in frame;
    if (!hasResult && !hasError) return ['neither a request, a notification nor a response'];
    if (hasResult && hasError) return ['a response with both result and error'];
    const errors = schema.check(hasResult ? 'SuccessResponse' : 'ErrorResponse', frame, 'response');
    if (hasError && frame.id === null) return errors; // a parse error whose request id was lost
    const key = idKey(frame.id);
    const method = inFlight[other].get(key);
    if (method === undefined) {
      errors.push(`response to id ${JSON.stringify(frame.id)}, which no ${other} request in flight has`);
      return errors;
    }
    inFlight[other].delete(key);
    if (hasResult) {
      const table = other === 'client' ? schema.methods : schema.requests;
      const result = Object.hasOwn(table, method) ? table[method].result : undefined;
      if (result) errors.push(...schema.check(result, frame.result, `${method} result`));
    }
    return errors;
  }

  return { validate };
}
