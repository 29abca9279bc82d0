// The kind and retry default of an error a host sends without `data`, against the error table of
// the vendor's own schema (test/fixtures/msp-schema/): a code missing here would read as
// `unknown`, and a host answering with the bare code would not be told apart from any other.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { kindForCode, MspError } from '../../../src/msp/errors.js';
import { SCHEMA_URL } from '../../support/mspSchema.mjs';

interface SchemaError {
  code: number;
  kind: string;
  retryable?: boolean;
}

const SCHEMA_ERRORS = (JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as { errors: SchemaError[] }).errors;

describe('error codes of the vendor schema', () => {
  it('lists codes to check', () => {
    expect(SCHEMA_ERRORS.length).toBeGreaterThan(20);
  });

  it.each(SCHEMA_ERRORS.map((e) => [e.code, e.kind, e.retryable ?? false] as const))(
    '%d is %s, retryable %s by default',
    (code, kind, retryable) => {
      expect(kindForCode(code)).toBe(kind);
      const error = new MspError({ code, message: 'bare' });
      expect({ kind: error.kind, retryable: error.retryable }).toEqual({ kind, retryable });
    },
  );

  it('a code the schema does not list stays unknown and is not retried', () => {
    const error = new MspError({ code: -32099, message: 'new' });
    expect({ kind: error.kind, retryable: error.retryable }).toEqual({ kind: 'unknown', retryable: false });
  });
});
