import { describe, expect, it } from 'vitest';
import type { ProducerPublicKey } from '@gm/contracts';
import { CapabilityIssuer, CapabilityVerifier, generateSigningKeyPair } from './capabilities.ts';
import { signIngestProof, verifyIngestProof } from './producer-proof.ts';

const NOW = new Date('2026-11-30T08:00:00.000Z');
const IAT = Math.floor(NOW.getTime() / 1000);
const WINDOW_MS = 60_000;
const message = { topic: 'ns.memory.ingest', key: 'cust-42', value: { requestId: 'r-1', content: 'Customer 42 prefers email' } };

async function producerKey() {
  const { privateJwk, publicJwk } = await generateSigningKeyPair();
  const key: ProducerPublicKey = { kty: 'OKP', crv: 'Ed25519', x: String(publicJwk.x) };
  return { privateJwk, publicJwk: key };
}

async function setup() {
  const signing = await generateSigningKeyPair();
  const issuer = await CapabilityIssuer.create(signing.privateJwk, 'gm');
  const verifier = await CapabilityVerifier.create(signing.publicJwk, 'gm');
  const keys = await producerKey();
  const { token } = await issuer.issue({
    tenant: 'acme', agentId: 'importer', scopes: [{ kind: 'project', id: 'maple' }], purpose: 'support', actions: ['write'], producerKey: keys.publicJwk,
  }, NOW, 0);
  return { verifier, keys, token };
}

const codeOf = (p: Promise<unknown>) => p.then(() => 'none', (err: { code?: string }) => err.code);

describe('key-bound capabilities (design §6.1)', () => {
  it('are refused as bearer tokens, and taken only by a caller that checks the proof itself', async () => {
    const { verifier, token } = await setup();
    expect(await codeOf(verifier.verify(token, NOW))).toBe('CAP_KEY_BOUND');
    // Cached after a verification: the refusal holds for the cached claims too.
    expect((await verifier.verify(token, NOW, { holderProof: true })).cnf?.jkt).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await codeOf(verifier.verify(token, NOW))).toBe('CAP_KEY_BOUND');
  });

  it('take a proof signed by the bound key over exactly this message, capability, topic and time window', async () => {
    const { verifier, keys, token } = await setup();
    const jkt = (await verifier.verify(token, NOW, { holderProof: true })).cnf?.jkt ?? '';
    const proof = await signIngestProof(keys, token, message, IAT, 'p-1');
    expect(await verifyIngestProof(proof, { capability: token, jkt, message }, NOW, WINDOW_MS)).toMatchObject({ jti: 'p-1' });
    const cases: Array<[string, () => Promise<unknown>, string]> = [
      ['none', () => verifyIngestProof('', { capability: token, jkt, message }, NOW, WINDOW_MS), 'CAP_PROOF_INVALID'],
      ['another body', () => verifyIngestProof(proof, { capability: token, jkt, message: { ...message, value: { ...message.value, content: 'x' } } }, NOW, WINDOW_MS), 'CAP_PROOF_INVALID'],
      ['another key', () => verifyIngestProof(proof, { capability: token, jkt, message: { ...message, key: 'cust-43' } }, NOW, WINDOW_MS), 'CAP_PROOF_INVALID'],
      ['another topic', () => verifyIngestProof(proof, { capability: token, jkt, message: { ...message, topic: 'memory.ingest' } }, NOW, WINDOW_MS), 'CAP_PROOF_INVALID'],
      ['another capability', () => verifyIngestProof(proof, { capability: `${token}x`, jkt, message }, NOW, WINDOW_MS), 'CAP_PROOF_INVALID'],
      ['signed by another key', async () => verifyIngestProof(await signIngestProof(await producerKey(), token, message, IAT), { capability: token, jkt, message }, NOW, WINDOW_MS), 'CAP_PROOF_INVALID'],
      ['too old', () => verifyIngestProof(proof, { capability: token, jkt, message }, new Date(NOW.getTime() + WINDOW_MS + 1_000), WINDOW_MS), 'CAP_PROOF_STALE'],
      ['too early', () => verifyIngestProof(proof, { capability: token, jkt, message }, new Date(NOW.getTime() - WINDOW_MS - 1_000), WINDOW_MS), 'CAP_PROOF_STALE'],
    ];
    for (const [name, result, code] of cases) expect([name, await codeOf(result())]).toEqual([name, code]);
  });

  it('sign the canonical JSON of the body: the same value spaced or ordered otherwise is the same body', async () => {
    const { verifier, keys, token } = await setup();
    const jkt = (await verifier.verify(token, NOW, { holderProof: true })).cnf?.jkt ?? '';
    const proof = await signIngestProof(keys, token, message, IAT);
    const reordered = { ...message, value: { content: message.value.content, requestId: message.value.requestId } };
    await expect(verifyIngestProof(proof, { capability: token, jkt, message: reordered }, NOW, WINDOW_MS)).resolves.toMatchObject({ iat: IAT });
  });
});
