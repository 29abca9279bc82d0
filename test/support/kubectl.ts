// kubectl for the tests that render deploy/kubernetes: which one, and what its kustomize can do.
// KUBECTL names another binary (for example Debian bookworm's, unpacked somewhere, to try the
// oldest kustomize .ci/run may install).

import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

export interface Kubectl {
  path: string;
  version: string;
  /** kustomize 3.7 or later (kubectl 1.21 or later): knows `components:`. */
  components: boolean;
}

/** The kubectl on PATH (or $KUBECTL), or undefined when there is none. */
export function findKubectl(): Kubectl | undefined {
  const path = process.env.KUBECTL?.trim() || 'kubectl';
  let out: string;
  try {
    out = execFileSync(path, ['version', '--client', '-o', 'json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 20_000,
    });
  } catch {
    return undefined;
  }
  const client = (
    JSON.parse(out) as { clientVersion?: { major?: string; minor?: string; gitVersion?: string } }
  ).clientVersion;
  const major = Number.parseInt(client?.major ?? '', 10);
  const minor = Number.parseInt(client?.minor ?? '', 10);
  return {
    path,
    version: client?.gitVersion ?? `${major}.${minor}`,
    // kubectl 1.21 moved from kustomize v2.0.3 to v4.0.5.
    components: major > 1 || (major === 1 && minor >= 21),
  };
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** `kubectl kustomize dir`, parsed: one object per YAML document. */
export async function kustomize(kubectl: Kubectl, dir: string): Promise<KubeObject[]> {
  const { stdout } = await promisify(execFile)(kubectl.path, ['kustomize', dir], {
    encoding: 'utf8',
    maxBuffer: 4 << 20,
    timeout: 30_000,
  });
  return parseAllDocuments(stdout).map((doc) => {
    if (doc.errors.length > 0) throw doc.errors[0];
    return doc.toJS() as KubeObject;
  });
}
