import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from './capabilities.ts';
import { publishedReceiptKeys, readReceiptKeyFile, rotateReceiptKeyFile } from './receipt-keys.ts';
import { ReceiptSigner, receiptPublicKey, verifyReceipt } from './receipts.ts';
import { sampleReceipt } from './receipt-fixtures.ts';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

async function keyFile(): Promise<{ file: string; publicFile: string; dir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-rkeys-'));
  dirs.push(dir);
  const keys = await generateSigningKeyPair();
  const file = path.join(dir, 'receipt-signing.jwk.json');
  writeFileSync(file, JSON.stringify(keys), { mode: 0o600 });
  const publicFile = path.join(dir, 'receipt-signing.public.jwk.json');
  writeFileSync(publicFile, JSON.stringify(keys.publicJwk));
  return { file, publicFile, dir };
}

const receipt = (receiptId: string) => sampleReceipt(receiptId, `job-${receiptId}`);

describe('receipt key rotation', () => {
  it('keeps every earlier public key, publishes them all, and writes the file whole and private', async () => {
    const { file, publicFile, dir } = await keyFile();
    const first = readReceiptKeyFile(file);
    const firstKid = (await receiptPublicKey(first.publicJwk)).kid;
    const one = await rotateReceiptKeyFile(file, publicFile);
    const two = await rotateReceiptKeyFile(file, publicFile);
    expect(one.previousKid).toBe(firstKid);
    expect(two.previousKid).toBe(one.kid);
    expect(two.retiredKids).toEqual([one.kid, firstKid]);
    expect((await publishedReceiptKeys(readReceiptKeyFile(file))).map((k) => k.kid)).toEqual([two.kid, one.kid, firstKid]);
    const jwks = JSON.parse(readFileSync(publicFile, 'utf8')) as { keys: Array<{ kid: string; d?: string }> };
    expect(jwks.keys.map((k) => k.kid)).toEqual([two.kid, one.kid, firstKid]);
    // No private half in what is published, no temporary file left, the key file the owner's alone.
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['receipt-signing.jwk.json', 'receipt-signing.public.jwk.json']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a receipt signed before a rotation verifies against the published keys, and only by its own key', async () => {
    const { file } = await keyFile();
    const before = await (await ReceiptSigner.create(readReceiptKeyFile(file))).sign(receipt('rcpt_1'));
    await rotateReceiptKeyFile(file);
    const rotated = readReceiptKeyFile(file);
    const after = await (await ReceiptSigner.create(rotated)).sign(receipt('rcpt_2'));
    const published = await publishedReceiptKeys(rotated);
    expect((await verifyReceipt(before.jws, published)).kid).toBe(before.kid);
    expect((await verifyReceipt(after.jws, published)).kid).toBe(after.kid);
    expect(after.kid).not.toBe(before.kid);
    await expect(verifyReceipt(before.jws, published.slice(0, 1))).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
  });

  it('refuses a file that is not a receipt key file, changing nothing', async () => {
    const { dir } = await keyFile();
    const bogus = path.join(dir, 'bogus.json');
    writeFileSync(bogus, '{"keys":[]}');
    await expect(rotateReceiptKeyFile(bogus)).rejects.toThrow('is not a receipt key file');
    expect(readFileSync(bogus, 'utf8')).toBe('{"keys":[]}');
  });
});
