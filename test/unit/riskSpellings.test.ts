// One request, many spellings: a risk rule that covers one covers them all. A host in capitals or
// with its root dot; a path relative to the workspace.

import { describe, expect, it } from 'vitest';
import type { ApprovalSubject } from '../../src/msp/protocol.js';
import { RiskRules } from '../../src/routing/risks.js';
import type { RiskRule } from '../../src/routing/route.js';

function namesOf(rules: RiskRule[]) {
  const compiled = new RiskRules(rules);
  return (subject: ApprovalSubject, workspaceRoot?: string, tool = 'bash') =>
    compiled
      .marksFor({ tool, subject, ...(workspaceRoot === undefined ? {} : { workspaceRoot }) })
      .map((mark) => mark.name);
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

describe('a file path', () => {
  const names = namesOf([
    { name: 'prod-config', match: { paths: ['/srv/app/config/**'] }, warning: 'Prod config' },
    { name: 'yaml', match: { paths: ['deploy/*.yml'] }, warning: 'Deploy file' },
    { name: 'passwords', match: { paths: ['/etc/passwd'] }, warning: 'Passwords' },
  ]);
  const file = (path: string): ApprovalSubject => ({ kind: 'fileAccess', path, access: 'write' });

  it('relative: resolved against the workspace root first', () => {
    expect(names(file('config/db.yml'), '/srv/app')).toEqual(['prod-config']);
    expect(names(file('./config/../config/db.yml'), '/srv/app/')).toEqual(['prod-config']);
    expect(names(file('../app/config/db.yml'), '/srv/other')).toEqual(['prod-config']);
    expect(names(file('config/db.yml'), '/srv/other')).toEqual([]);
    expect(names({ kind: 'unixSocket', path: 'config/run.sock' }, '/srv/app')).toEqual(['prod-config']);
  });

  it('a pattern without a leading "/" is relative to the workspace root, however the path is spelt', () => {
    expect(names(file('deploy/prod.yml'), '/srv/app')).toEqual(['yaml']);
    expect(names(file('/srv/app/deploy/prod.yml'), '/srv/app')).toEqual(['yaml']);
    expect(names(file('/srv/other/deploy/prod.yml'), '/srv/app')).toEqual([]);
    expect(names(file('/srv/app/deploy/prod.yml'), '/srv/other')).toEqual([]);
  });

  it('relative with no known root: as written, and as if below any directory', () => {
    // The root could be /srv/app/config: `/srv/app/config/**` then covers any relative path.
    expect(names(file('README.md'))).toEqual(['prod-config']);
    expect(names(file('deploy/prod.yml'))).toEqual(['prod-config', 'yaml']);
    expect(names(file('../../etc/passwd'))).toEqual(['prod-config', 'passwords']);
    expect(names(file('passwd'))).toEqual(['prod-config', 'passwords']);
    const exact = namesOf([{ name: 'k', match: { paths: ['/srv/tls/server.key'] }, warning: 'Key' }]);
    expect(exact(file('server.key'))).toEqual(['k']);
    expect(exact(file('../tls/server.key'))).toEqual(['k']);
    expect(exact(file('server.pem'))).toEqual([]);
    expect(exact(file('other/server.key'))).toEqual([]);
    // An absolute path, root unknown: the root could be any of its directories.
    expect(names(file('/home/me/deploy/prod.yml'))).toEqual(['yaml']);
    expect(names(file('/home/me/README.md'))).toEqual([]);
  });
});
