import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromB64u, toB64u } from './base64url.ts';
import { Envelope, decryptContent, encryptContent, type ContentAad } from './envelope.ts';
import { PSEUDONYM_KEY_ID, dataKeyId, derivePseudonymKey, generateKey, kekId, unwrapKey, wrapKey } from './keys.ts';

const PSEUDONYM = { kid: PSEUDONYM_KEY_ID, key: randomBytes(32) };

const aad: ContentAad = { tenantId: 't1', subjectId: 'alice@example.com', recordId: '01HZX0RECORD', version: 1 };
const dk = generateKey(dataKeyId('t1', aad.recordId));
const PLAINTEXT = 'Alice prefers tea — née Smith, lives at 12 Rue Lepic ✓';

/** Flips one bit of a base64url field. */
function flip(field: string, byte = 0): string {
  const bytes = fromB64u(field);
  bytes[byte] = (bytes[byte] ?? 0) ^ 0x01;
  return toB64u(bytes);
}

describe('content envelope (AES-256-GCM)', () => {
  it('round-trips UTF-8 content, with a fresh IV each time', () => {
    const a = encryptContent(PLAINTEXT, dk, aad);
    const b = encryptContent(PLAINTEXT, dk, aad);
    expect(Envelope.parse(a)).toEqual(a);
    expect(a.kid).toBe(dk.kid);
    expect(a.iv).not.toBe(b.iv);
    expect(a.ct).not.toBe(b.ct);
    expect(decryptContent(a, dk, aad)).toBe(PLAINTEXT);
    expect(decryptContent(encryptContent('', dk, aad), dk, aad)).toBe('');
  });

  it('fails on a changed ciphertext, tag or IV', () => {
    const env = encryptContent(PLAINTEXT, dk, aad);
    for (const tampered of [{ ...env, ct: flip(env.ct, 3) }, { ...env, tag: flip(env.tag) }, { ...env, iv: flip(env.iv) }]) {
      expect(() => decryptContent(tampered, dk, aad)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
    }
  });

  it('cannot be replayed onto another record, version, subject or tenant (AAD)', () => {
    const env = encryptContent(PLAINTEXT, dk, aad);
    const others: ContentAad[] = [
      { ...aad, recordId: '01HZX0OTHER' },
      { ...aad, version: 2 },
      { ...aad, subjectId: 'bob@example.com' },
      { ...aad, tenantId: 't2' },
    ];
    for (const other of others) {
      expect(() => decryptContent(env, dk, other)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
    }
  });

  it('fails with another key, and refuses a key whose id is not the one the envelope names', () => {
    const env = encryptContent(PLAINTEXT, dk, aad);
    expect(() => decryptContent(env, { kid: dk.kid, key: randomBytes(32) }, aad)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
    expect(() => decryptContent(env, generateKey('dk:t1/other/1'), aad)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
  });

  it('has a strict schema: unpadded base64url, 12-byte IV, 16-byte tag, v 1 or 2', () => {
    const env = encryptContent(PLAINTEXT, dk, aad);
    expect(Envelope.safeParse({ ...env, v: 3 }).success).toBe(false);
    expect(Envelope.safeParse({ ...env, iv: `${env.iv}AA` }).success).toBe(false);
    expect(Envelope.safeParse({ ...env, tag: env.tag.slice(1) }).success).toBe(false);
    expect(Envelope.safeParse({ ...env, ct: `${env.ct}=` }).success).toBe(false);
    expect(Envelope.safeParse({ ...env, extra: 1 }).success).toBe(false);
  });

  it('binds its version: a v1 envelope relabelled v2 (or the reverse) fails AUTH_FAILED instead of reading as the other format', () => {
    const v1 = encryptContent(PLAINTEXT, dk, aad);
    const v2 = encryptContent(PLAINTEXT, dk, aad, 2);
    expect([v1.v, v2.v]).toEqual([1, 2]);
    expect(decryptContent(v2, dk, aad)).toBe(PLAINTEXT);
    expect(() => decryptContent({ ...v1, v: 2 }, dk, aad)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
    expect(() => decryptContent({ ...v2, v: 1 }, dk, aad)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
  });

  it('holds no plaintext, in any encoding, and no key bytes', () => {
    const bytes = Buffer.from(JSON.stringify(encryptContent(PLAINTEXT, dk, aad)), 'utf8');
    const plain = Buffer.from(PLAINTEXT, 'utf8');
    for (const needle of ['Alice', 'Smith', 'Lepic', plain.toString('base64'), plain.toString('base64url'), plain.toString('hex')]) {
      expect(bytes.includes(needle)).toBe(false);
    }
    for (const encoding of ['base64', 'base64url', 'hex'] as const) expect(bytes.includes(dk.key.toString(encoding))).toBe(false);
  });
});

describe('key wrapping and ids', () => {
  it('wraps and unwraps a key; the AAD is the key id, so a wrapped key cannot move to another id', () => {
    const master = { kid: 'm1', key: randomBytes(32) };
    const kek = generateKey(kekId(PSEUDONYM, 't1', 'alice'));
    const wrapped = wrapKey('kek', kek, master);
    expect(wrapped.wrappedBy).toBe('m1');
    expect(unwrapKey(wrapped, master).key.equals(kek.key)).toBe(true);
    expect(() => unwrapKey({ ...wrapped, kid: kekId(PSEUDONYM, 't1', 'bob') }, master)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
    expect(() => unwrapKey({ ...wrapped, kind: 'dk' }, master)).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
    expect(() => unwrapKey(wrapped, { kid: 'm1', key: randomBytes(32) })).toThrow(expect.objectContaining({ reason: 'AUTH_FAILED' }));
  });

  it('derives KEK ids deterministically under the pseudonym key, without the subject in clear or a plain hash of it', () => {
    const id = (tenant: string, subject: string, key = PSEUDONYM) => kekId(key, tenant, subject);
    expect(id('t1', 'alice@example.com')).toBe(id('t1', 'alice@example.com'));
    expect(id('t1', 'alice@example.com')).not.toBe(id('t2', 'alice@example.com'));
    // No separator trick: tenant "a/b" + subject "c" is not tenant "a" + subject "b/c".
    expect(id('a/b', 'c')).not.toBe(id('a', 'b/c'));
    expect(id('t1', 'alice@example.com')).toMatch(/^kek:[A-Za-z0-9_-]{43}$/);
    expect(id('t1', 'alice@example.com')).not.toContain('alice');
    // Keyed: whoever guesses the subject cannot compute the id without the deployment's key,
    // and the old unkeyed digest of the same parts is not it.
    expect(id('t1', 'alice@example.com', { kid: PSEUDONYM_KEY_ID, key: randomBytes(32) })).not.toBe(id('t1', 'alice@example.com'));
    const plain = createHash('sha256').update(JSON.stringify(['gm.kek.v1', 't1', 'alice@example.com', 1]), 'utf8').digest('base64url');
    expect(id('t1', 'alice@example.com')).not.toBe(`kek:${plain}`);
    // The pseudonym key as first made: the same from the same master key (instances racing to create it agree), another from another.
    const master = { kid: 'm1', key: randomBytes(32) };
    expect(derivePseudonymKey(master).key.equals(derivePseudonymKey({ ...master }).key)).toBe(true);
    expect(derivePseudonymKey(master).key.equals(derivePseudonymKey({ kid: 'm1', key: randomBytes(32) }).key)).toBe(false);
    expect(derivePseudonymKey(master).key.equals(master.key)).toBe(false);
    expect(dataKeyId('t1', '01HZX0RECORD', 2)).toBe('dk:t1/01HZX0RECORD/2');
    expect(() => dataKeyId('t1', 'r', 0)).toThrow(RangeError);
  });
});
