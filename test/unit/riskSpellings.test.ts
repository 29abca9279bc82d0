// One request, many spellings: a risk rule that covers one covers them all. A host in capitals or
// with its root dot.

import { describe, expect, it } from 'vitest';
import type { ApprovalSubject } from '../../src/msp/protocol.js';
import { RiskRules } from '../../src/routing/risks.js';
import type { RiskRule } from '../../src/routing/route.js';

function namesOf(rules: RiskRule[]) {
  const compiled = new RiskRules(rules);
  return (subject: ApprovalSubject, tool = 'bash') =>
    compiled.marksFor({ tool, subject }).map((mark) => mark.name);
}

describe('a target host', () => {
  const names = namesOf([
    { name: 'production', match: { targets: ['*.prod.example.com'] }, warning: 'Prod' },
  ]);
  const network = (host: string): ApprovalSubject => ({
    kind: 'network',
    host,
    port: 443,
    protocol: 'https',
  });

  it('in any case, with or without its root dot', () => {
    expect(names(network('db.prod.example.com'))).toEqual(['production']);
    expect(names(network('db.prod.example.com.'))).toEqual(['production']);
    expect(names(network('DB.PROD.Example.COM.'))).toEqual(['production']);
    expect(names(network('db.prod.example.com.evil.net'))).toEqual([]);
    expect(names(network('db.staging.example.com.'))).toEqual([]);
  });

  it('a pattern in capitals or with the root dot means the same', () => {
    const dotted = namesOf([{ name: 'p', match: { targets: ['*.PROD.Example.com.'] }, warning: 'Prod' }]);
    expect(dotted(network('db.prod.example.com'))).toEqual(['p']);
    expect(dotted(network('db.prod.example.com.'))).toEqual(['p']);
  });

  it('as a URL parser reads it: internationalized names and IPv4 forms', () => {
    const idn = namesOf([
      { name: 'idn', match: { targets: ['*.bücher.example'] }, warning: 'Books' },
      { name: 'loopback', match: { targets: ['127.0.0.*'] }, warning: 'Local' },
    ]);
    expect(idn(network('shop.xn--bcher-kva.example'))).toEqual(['idn']);
    expect(idn(network('shop.BÜCHER.example.'))).toEqual(['idn']);
    expect(idn(network('0x7f.1'))).toEqual(['loopback']);
  });
});
