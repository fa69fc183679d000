import { describe, expect, it } from 'vitest';
import { ReceiptSigner, generateSigningKeyPair, type SigningKeyPair } from '@gm/policy';
import { sampleReceipt } from '@gm/policy/receipt-fixtures';
import { publishedReceiptKeys } from '@gm/policy/receipt-keys';
import { verdictText, verifyReceiptJws } from './receipts.ts';

// The console verifies with WebCrypto what the receipt-verifier signs with jose: the same bytes.
const receipt = sampleReceipt('rcpt_console', 'job-console');
const b64url = (text: string) => Buffer.from(text).toString('base64url');

/** A compact JWS made by hand (WebCrypto), for headers and payloads the server's signer never makes. */
async function signCompact(header: object, payload: unknown, privateJwk: SigningKeyPair['privateJwk']): Promise<string> {
  const key = await crypto.subtle.importKey('jwk', privateJwk, { name: 'Ed25519' }, false, ['sign']);
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const signature = await crypto.subtle.sign({ name: 'Ed25519' }, key, new TextEncoder().encode(input));
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
}

describe('receipt verification in the console (WebCrypto Ed25519)', () => {
  it('finds valid what the server signed, by the published key its kid names, retired keys included', async () => {
    const old = await generateSigningKeyPair();
    const oldSigner = await ReceiptSigner.create(old);
    const current = await generateSigningKeyPair();
    const keys = await publishedReceiptKeys({ ...current, retired: [old.publicJwk] });
    const { jws } = await oldSigner.sign(receipt);
    const verdict = await verifyReceiptJws(jws, keys);
    expect(verdict).toMatchObject({ valid: true, kid: oldSigner.kid, payload: { jobId: 'job-console' } });
    expect(verdictText(verdict)).toMatch(/^valid: /);
  });

  it('finds invalid, with a reason, an edited payload, another key, a wrong typ and malformed text', async () => {
    const keys = await generateSigningKeyPair();
    const signer = await ReceiptSigner.create(keys);
    const other = await ReceiptSigner.create(await generateSigningKeyPair());
    const { jws } = await signer.sign(receipt);
    const [header = '', , signature = ''] = jws.split('.');
    const edited = `${header}.${b64url(JSON.stringify({ ...receipt, retention: 'purged', recordIds: [] }))}.${signature}`;

    const cases: Array<[string, Parameters<typeof verifyReceiptJws>[1], RegExp]> = [
      [edited, [signer.publicKey], /does not verify/],
      [jws, [{ ...other.publicKey, kid: signer.kid }], /does not verify/],
      [jws, [other.publicKey], /no published receipt key has kid/],
      ['', [signer.publicKey], /not a compact JWS/],
      ['a.b', [signer.publicKey], /not a compact JWS/],
      ['%%%.e30.AA', [signer.publicKey], /header is not base64url JSON/],
      [`${header}.${b64url('{}')}.${'A'.repeat(10)}`, [signer.publicKey], /not a base64url Ed25519 signature/],
    ];
    for (const [text, published, reason] of cases) {
      const verdict = await verifyReceiptJws(text, published);
      expect(verdict.valid).toBe(false);
      expect(verdictText(verdict)).toMatch(/^invalid: /);
      expect(verdictText(verdict)).toMatch(reason);
    }

    const capabilityTyped = await signCompact({ alg: 'EdDSA', typ: 'cap+jwt', kid: signer.kid }, receipt, keys.privateJwk);
    expect(verdictText(await verifyReceiptJws(capabilityTyped, [signer.publicKey]))).toMatch(/^invalid: unexpected header/);
  });

  it('tries every key when the header has no kid, and refuses a signed payload that is not a receipt', async () => {
    const keys = await generateSigningKeyPair();
    const signer = await ReceiptSigner.create(keys);
    const other = await ReceiptSigner.create(await generateSigningKeyPair());
    const sign = (payload: unknown, kid?: string) =>
      signCompact({ alg: 'EdDSA', typ: 'receipt+jws', ...(kid === undefined ? {} : { kid }) }, payload, keys.privateJwk);

    expect(await verifyReceiptJws(await sign(receipt), [other.publicKey, signer.publicKey])).toMatchObject({ valid: true, kid: signer.kid });
    expect(verdictText(await verifyReceiptJws(await sign({ hello: 'world' }, signer.kid), [signer.publicKey])))
      .toMatch(/^invalid: .*not a deletion receipt/);
  });
});
