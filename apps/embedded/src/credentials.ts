import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { JWK } from 'jose';
import { generateSigningKeyPair, type SigningKeyPair } from '@gm/policy';

export interface Credentials {
  issuerCredential: string;
  /** Where the generated credential lives; undefined when it came from the environment. */
  issuerCredentialFile?: string;
  signing: SigningKeyPair;
  publicKeyFile: string;
  /** Signs deletion receipts (receipt-verifier); its public half verifies them offline. */
  receipt: SigningKeyPair;
  receiptKeyFile: string;
  receiptPublicKeyFile: string;
}

function writeSecret(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
}

/** A key pair kept in `dir/<name>.jwk.json` (0600) with its public half in `<name>.public.jwk.json`. */
async function loadOrCreateKeyPair(dir: string, name: string): Promise<{ keys: SigningKeyPair; file: string; publicFile: string }> {
  const file = path.join(dir, `${name}.jwk.json`);
  const publicFile = path.join(dir, `${name}.public.jwk.json`);
  let keys: SigningKeyPair;
  if (existsSync(file)) {
    keys = JSON.parse(readFileSync(file, 'utf8')) as { privateJwk: JWK; publicJwk: JWK };
  } else {
    keys = await generateSigningKeyPair();
    writeSecret(file, JSON.stringify(keys));
  }
  if (!existsSync(publicFile)) writeFileSync(publicFile, JSON.stringify(keys.publicJwk));
  return { keys, file, publicFile };
}

/**
 * The issuer credential comes from configuration, or is generated into the data directory at
 * first start (mode 0600). The capability signing key pair and the receipt signing key pair are
 * generated there too (a data directory from before receipts gets its receipt key at the next
 * start); the public halves are also written alone so verifiers elsewhere can use them.
 */
export async function loadOrCreateCredentials(dataDir: string, configured: string | undefined): Promise<Credentials> {
  const dir = path.join(dataDir, 'keys');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const capability = await loadOrCreateKeyPair(dir, 'capability-signing');
  const receipt = await loadOrCreateKeyPair(dir, 'receipt-signing');
  const keys = {
    signing: capability.keys, publicKeyFile: capability.publicFile,
    receipt: receipt.keys, receiptKeyFile: receipt.file, receiptPublicKeyFile: receipt.publicFile,
  };
  if (configured !== undefined) return { issuerCredential: configured, ...keys };
  const credentialFile = path.join(dataDir, 'issuer-credential');
  if (!existsSync(credentialFile)) writeSecret(credentialFile, `gmi_${randomBytes(32).toString('base64url')}\n`);
  return { issuerCredential: readFileSync(credentialFile, 'utf8').trim(), issuerCredentialFile: credentialFile, ...keys };
}
