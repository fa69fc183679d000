import { CompactSign, compactVerify, importJWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { sampleReceipt } from './receipt-fixtures.ts';
import { generateSigningKeyPair } from './capabilities.ts';
import { ReceiptSigner, decodeReceiptPayload, verifyReceipt } from './receipts.ts';

const receipt = sampleReceipt();

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

  it('keeps verifying a receipt signed before commitments (plain hashes, a hold\'s reason), with any JOSE library too', async () => {
    const keys = await generateSigningKeyPair();
    const signer = await ReceiptSigner.create(keys);
    const { contentCommitments: _new, ...rest } = receipt;
    const old = { ...rest, contentHashes: [{ recordId: 'm-1', sha256: 'a'.repeat(64) }], legalHold: { holdId: 'h-1', reason: 'litigation' } };
    const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(old)))
      .setProtectedHeader({ alg: 'EdDSA', typ: 'receipt+jws', kid: signer.kid }).sign(await importJWK(keys.privateJwk, 'EdDSA'));
    expect((await verifyReceipt(jws, [signer.publicKey])).payload).toEqual(old);
    // A third party's check: jose's compactVerify with the published JWK, nothing of ours.
    const { payload } = await compactVerify((await signer.sign(receipt)).jws, await importJWK(signer.publicKey, 'EdDSA'));
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(receipt);
  });
});
