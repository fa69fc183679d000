import { CompactSign, importJWK } from 'jose';
import { describe, expect, it } from 'vitest';
import type { DeletionReceipt } from '@gm/contracts';
import { generateSigningKeyPair } from './capabilities.ts';
import { ReceiptSigner, decodeReceiptPayload, verifyReceipt } from './receipts.ts';

const receipt: DeletionReceipt = {
  receiptId: 'rcpt_1', jobId: 'job-1', tenant: 'acme', mode: 'delete', subjectId: 'cust-1', recordIds: ['m-1'],
  contentHashes: [{ recordId: 'm-1', sha256: 'a'.repeat(64) }],
  requestedBy: { agentId: 'bot', principalId: 'alice' }, requestedAt: '2026-11-30T08:00:00.000Z', completedAt: '2026-11-30T08:00:01.000Z',
  policyRevision: 3, targets: [{ target: 'primary', status: 'done', completedAt: '2026-11-30T08:00:01.000Z', ref: 'removed=1;remaining=0' }],
  replay: { probes: 6, ref: 'probes=6;findings=0', attempts: 1, findings: [] }, status: 'verified', retention: 'purged',
  eventLog: { holdsContent: true, note: 'memory.events still holds the content' },
  issuedAt: '2026-11-30T08:00:02.000Z', issuer: 'test',
};

describe('deletion receipts (Ed25519 compact JWS)', () => {
  it('signs with typ receipt+jws and a kid, and verifies with the public key alone', async () => {
    const signer = await ReceiptSigner.create(await generateSigningKeyPair());
    const signed = await signer.sign(receipt);
    expect(JSON.parse(Buffer.from(signed.jws.split('.')[0] ?? '', 'base64url').toString('utf8'))).toEqual({ alg: 'EdDSA', typ: 'receipt+jws', kid: signer.kid });
    expect(await verifyReceipt(signed.jws, [signer.publicKey])).toEqual({ payload: receipt, kid: signer.kid });
    expect(decodeReceiptPayload(signed.jws)).toEqual(receipt);
  });

  it('rejects an edited payload, another key, a missing key and another typ', async () => {
    const keys = await generateSigningKeyPair();
    const signer = await ReceiptSigner.create(keys);
    const other = await ReceiptSigner.create(await generateSigningKeyPair());
    const { jws } = await signer.sign(receipt);
    const [header, , signature] = jws.split('.');
    const edited = Buffer.from(JSON.stringify({ ...receipt, eventLog: { holdsContent: false, note: '' } })).toString('base64url');
    await expect(verifyReceipt(`${header}.${edited}.${signature}`, [signer.publicKey])).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
    await expect(verifyReceipt(jws, [{ ...other.publicKey, kid: signer.kid }])).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
    await expect(verifyReceipt(jws, [other.publicKey])).rejects.toThrow(/no public key with kid/);
    const capabilityTyped = await new CompactSign(new TextEncoder().encode(JSON.stringify(receipt)))
      .setProtectedHeader({ alg: 'EdDSA', typ: 'cap+jwt', kid: signer.kid }).sign(await importJWK(keys.privateJwk, 'EdDSA'));
    await expect(verifyReceipt(capabilityTyped, [signer.publicKey])).rejects.toThrow(/unexpected header/);
    await expect(verifyReceipt('not a jws', [signer.publicKey])).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
  });
});
