import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { proofKeyFile, proofMessage, proveRuntime, RuntimeProofQuery, RuntimeProver, socketAddress } from './runtime-proof.ts';

const keyPair = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateJwk: privateKey.export({ format: 'jwk' }), publicJwk: publicKey.export({ format: 'jwk' }) };
};

/** The runtime's half of the proof on a real socket, signing with `privateJwk` (design §9.2). */
async function prover(privateJwk: object): Promise<{ url: string; server: Server }> {
  const signer = new RuntimeProver(privateJwk);
  const server = createServer((req, res) => {
    const nonce = RuntimeProofQuery.parse(Object.fromEntries(new URL(req.url ?? '/', 'http://x').searchParams)).nonce;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(signer.prove(socketAddress(req.socket.localAddress, req.socket.localPort), nonce)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('the runtime proof (design §9.2)', () => {
  const cleanup: Array<() => void> = [];
  afterEach(() => cleanup.splice(0).forEach((f) => f()));
  const dataDirWith = (publicJwk: object) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-proof-'));
    mkdirSync(path.join(dir, 'keys'), { mode: 0o700 });
    writeFileSync(proofKeyFile(dir), JSON.stringify(publicJwk), { mode: 0o600 });
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it('signs a message no JWS signing input can be: a proof never passes for a capability', () => {
    // A JWS signs base64url(header) "." base64url(payload): base64url and dots only.
    expect(proofMessage('127.0.0.1:8080', 'A'.repeat(43)).toString('utf8')).toMatch(/[^A-Za-z0-9_.-]/);
  });

  it('believes the runtime whose key is in the data directory, and not a server signing with another key', async () => {
    const genuine = keyPair();
    const dir = dataDirWith(genuine.publicJwk);
    const ours = await prover(genuine.privateJwk);
    const other = await prover(keyPair().privateJwk);
    cleanup.push(() => ours.server.close(), () => other.server.close());
    await expect(proveRuntime(ours.url, dir)).resolves.toBeUndefined();
    await expect(proveRuntime(other.url, dir)).rejects.toThrow(
      `the server at ${other.url} could not prove it is the runtime of ${dir} (its signature does not verify with ${proofKeyFile(dir)}); set MEMORY_URL to the runtime's address`,
    );
  });

  it('asks nothing of a server when the data directory holds no key, or one others may write', async () => {
    const genuine = keyPair();
    const ours = await prover(genuine.privateJwk);
    cleanup.push(() => ours.server.close());
    const empty = mkdtempSync(path.join(os.tmpdir(), 'gm-proof-'));
    cleanup.push(() => rmSync(empty, { recursive: true, force: true }));
    await expect(proveRuntime(ours.url, empty)).rejects.toThrow('no key to check it with');
    const dir = dataDirWith(genuine.publicJwk);
    chmodSync(proofKeyFile(dir), 0o666);
    await expect(proveRuntime(ours.url, dir)).rejects.toThrow('someone else could have written it');
  });
});
