// The frame checker of the e2e tests (test/support/mspSchema.mjs) against the vendor's schema:
// what it accepts, what it rejects, and the two load-time changes (open enums, approval/reviewing).

import { readdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildInitializeParams } from '../../../src/msp/handshake.js';
import { createFrameValidator, loadMspSchema } from '../../support/mspSchema.mjs';
import { TRANSCRIPTS_DIR, transcriptLines } from '../../support/transcripts.js';

const SESSION = '0198f0aa-1111-7000-8000-0000000000aa';
const APPROVAL = '0198f0ac-7777-7000-8000-0000000000e1';
const COMMAND = '018f6a2a-3333-7abc-8def-00000000d001';
const RANGE = {
  stream: { kind: 'session', id: SESSION },
  first: { id: 'r1', sequence: 1 },
  last: { id: 'r1', sequence: 1 },
};

const approvalParams = {
  sessionId: SESSION,
  approvalId: APPROVAL,
  turnId: 't1',
  taskId: 'task1',
  itemId: 'item1',
  toolCallId: 'call_1',
  toolName: 'write_file',
  rawArgs: '{}',
  viewCursor: `v:${SESSION}:7`,
  sourceRange: RANGE,
  subject: { kind: 'fileAccess', path: '/srv/repo/README.md', access: 'write' },
  currentRequirementId: { approvalId: APPROVAL, sourceIndex: 0 },
  availableChoices: [{ choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' }],
  protectedWrite: false,
  judgeEscalated: false,
};

const resolvedParams = {
  sessionId: SESSION,
  approvalId: APPROVAL,
  itemId: 'item1',
  turnId: 't1',
  decision: 'approved',
  policyResult: 'allow',
  resolvedBy: 'user',
  stageEvidence: [],
  sourceRange: RANGE,
  viewCursor: `v:${SESSION}:8`,
};

const decideParams = {
  sessionId: SESSION,
  commandId: COMMAND,
  approvalId: APPROVAL,
  requirementId: { approvalId: APPROVAL, sourceIndex: 0 },
  choiceId: 'allow_once',
};

function notification(method: string, params: unknown) {
  return { jsonrpc: '2.0', method, params };
}

describe('mspSchema', () => {
  beforeAll(async () => {
    // Compiles (or loads the cached) validators once, outside any one test's time.
    await loadMspSchema();
  });

  it('accepts every frame of the vendored transcripts, both ways, in order', async () => {
    const names = readdirSync(TRANSCRIPTS_DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(names.length).toBeGreaterThanOrEqual(9);
    for (const name of names) {
      const fresh = await createFrameValidator();
      for (const [i, line] of transcriptLines(name).entries()) {
        const errors = fresh.validate(line.raw, line.dir);
        expect(errors, `${name} line ${i + 1} (${line.dir}): ${line.raw.slice(0, 120)}`).toEqual([]);
      }
    }
  });

  it("accepts the bot's own initialize and initialized", async () => {
    const fresh = await createFrameValidator();
    const params = buildInitializeParams('1.2.3');
    expect(fresh.validate({ jsonrpc: '2.0', id: 'c1', method: 'initialize', params }, 'client')).toEqual([]);
    expect(fresh.validate({ jsonrpc: '2.0', method: 'initialized' }, 'client')).toEqual([]);
  });

  it('checks a request by its method and rejects what a decide must not look like', async () => {
    const fresh = await createFrameValidator();
    const decide = (params: unknown) =>
      fresh.validate({ jsonrpc: '2.0', id: 'c7', method: 'approval/decide', params }, 'client');
    expect(decide(decideParams)).toEqual([]);
    expect(decide({ ...decideParams, feedback: null })).toEqual([]);
    const { requirementId: _dropped, ...withoutRequirement } = decideParams;
    expect(decide(withoutRequirement).join('\n')).toMatch(
      /approval\/decide params .*must have required property 'requirementId'/,
    );
    expect(
      decide({ ...decideParams, requirementId: { approvalId: APPROVAL, sourceIndex: '0' } }).join('\n'),
    ).toMatch(/\/requirementId\/sourceIndex: must be integer/);
    expect(decide({ ...decideParams, feedback: 7 }).join('\n')).toMatch(/\/feedback: must be string/);
  });

  it('checks a response by the method of the request it answers', async () => {
    const fresh = await createFrameValidator();
    expect(
      fresh.validate({ jsonrpc: '2.0', id: 'c1', method: 'session/list', params: {} }, 'client'),
    ).toEqual([]);
    expect(
      fresh.validate({ jsonrpc: '2.0', id: 'c2', method: 'approval/decide', params: decideParams }, 'client'),
    ).toEqual([]);
    // Answered out of order: each answer is checked against its own request's result.
    const decideAck = { commandId: COMMAND, status: 'accepted', approvalId: APPROVAL, terminal: true };
    expect(fresh.validate({ jsonrpc: '2.0', id: 'c2', result: decideAck }, 'server')).toEqual([]);
    expect(fresh.validate({ jsonrpc: '2.0', id: 'c1', result: decideAck }, 'server').join('\n')).toMatch(
      /session\/list result .*must have required property 'sessions'/,
    );
    // Both answered now: a second answer to either is an answer to nothing.
    expect(fresh.validate({ jsonrpc: '2.0', id: 'c2', result: decideAck }, 'server').join('\n')).toMatch(
      /no client request in flight/,
    );
    // Ids are typed: "1" does not answer 1.
    expect(
      fresh.validate({ jsonrpc: '2.0', id: 1, method: 'approval/request', params: approvalParams }, 'server'),
    ).toEqual([]);
    expect(fresh.validate({ jsonrpc: '2.0', id: '1', result: {} }, 'client').join('\n')).toMatch(
      /no server request in flight/,
    );
    expect(fresh.validate({ jsonrpc: '2.0', id: 1, result: {} }, 'client')).toEqual([]);
  });

  it('checks error responses by the error shape', async () => {
    const fresh = await createFrameValidator();
    fresh.validate(
      { jsonrpc: '2.0', id: 'c1', method: 'approval/listPending', params: { sessionId: SESSION } },
      'client',
    );
    fresh.validate(
      { jsonrpc: '2.0', id: 'c2', method: 'approval/listPending', params: { sessionId: SESSION } },
      'client',
    );
    const good = { code: -32020, message: 'gone', data: { kind: 'sessionNotFound', sessionId: SESSION } };
    expect(fresh.validate({ jsonrpc: '2.0', id: 'c1', error: good }, 'server')).toEqual([]);
    expect(
      fresh
        .validate(
          { jsonrpc: '2.0', id: 'c2', error: { code: -32020, data: { sessionId: SESSION } } },
          'server',
        )
        .join('\n'),
    ).toMatch(/must have required property 'message'[\s\S]*must have required property 'kind'/);
    // A parse error whose request id was lost answers nothing in particular.
    expect(
      fresh.validate({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }, 'server'),
    ).toEqual([]);
  });

  it('rejects frames that are not JSON-RPC 2.0', async () => {
    const fresh = await createFrameValidator();
    expect(fresh.validate('this is not json', 'server')).toEqual(['not JSON']);
    expect(fresh.validate('[1,2,3]', 'server')).toEqual(['not a JSON object']);
    expect(fresh.validate({ jsonrpc: '1.0', method: 'initialized' }, 'client').join('\n')).toMatch(
      /\/jsonrpc: must be equal to one of the allowed values/,
    );
    expect(fresh.validate({ jsonrpc: '2.0', id: 3 }, 'server')).toEqual([
      'neither a request, a notification nor a response',
    ]);
  });

  it('lets the host send methods it does not know, never the client', async () => {
    const fresh = await createFrameValidator();
    expect(fresh.validate(notification('fake/padding', { pad: 'x' }), 'server')).toEqual([]);
    expect(
      fresh.validate({ jsonrpc: '2.0', id: 4, method: 'host/somethingNew', params: {} }, 'server'),
    ).toEqual([]);
    // ...which the bot refuses with methodNotFound: an error response to a request in flight.
    const refusal = { code: -32601, message: 'method not found', data: { kind: 'methodNotFound' } };
    expect(fresh.validate({ jsonrpc: '2.0', id: 4, error: refusal }, 'client')).toEqual([]);
    expect(
      fresh.validate({ jsonrpc: '2.0', id: 'c1', method: 'approval/approveAll', params: {} }, 'client'),
    ).toEqual(['approval/approveAll: not a method a client may call']);
    expect(fresh.validate(notification('approval/resolved', resolvedParams), 'client')).toEqual([
      'approval/resolved: not a notification a client sends',
    ]);
    expect(fresh.validate({ jsonrpc: '2.0', method: 'initialized' }, 'server')).toEqual([
      'initialized: a client-to-server notification, sent by the server',
    ]);
  });

  it('accepts new values in open enums and rejects them in closed ones', async () => {
    const schema = await loadMspSchema();
    expect(schema.openedEnums).toBeGreaterThan(30);
    const fresh = await createFrameValidator();
    expect(
      fresh.validate(
        notification('approval/resolved', { ...resolvedParams, decision: 'approvedForever' }),
        'server',
      ),
    ).toEqual([]);
    expect(
      fresh.validate(
        notification('session/closed', { sessionId: SESSION, reason: 'evicted', viewCursor: null }),
        'server',
      ),
    ).toEqual([]);
    expect(
      schema.check('SessionHistory', { mode: 'none', noneReason: 'brandNew', items: null, snapshot: null }),
    ).toEqual([]);
    expect(schema.check('ErrorData', { kind: 'brandNewKind' })).toEqual([]);
    // Closed: PlatformFamily, HistoryPreference, JsonRpcVersion.
    expect(schema.check('PlatformFamily', 'beos').join('\n')).toMatch(
      /must be equal to one of the allowed values/,
    );
    expect(schema.check('HistoryPreference', 'everything')).not.toEqual([]);
    // Opened means any string, not anything: the type still holds.
    expect(schema.check('ApprovalDecision', 7).join('\n')).toMatch(/must be string/);
  });

  it('checks approval/reviewing as ApprovalRequestParams, which the vendored bundle lacks', async () => {
    const schema = await loadMspSchema();
    expect(schema.vendored.notifications).not.toHaveProperty('approval/reviewing');
    const fresh = await createFrameValidator();
    expect(fresh.validate(notification('approval/reviewing', approvalParams), 'server')).toEqual([]);
    const { availableChoices: _dropped, ...withoutChoices } = approvalParams;
    expect(fresh.validate(notification('approval/reviewing', withoutChoices), 'server').join('\n')).toMatch(
      /approval\/reviewing params .*must have required property 'availableChoices'/,
    );
  });
});
