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
}

function writeSecret(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
}

/**
 * The issuer credential comes from configuration, or is generated into the data directory at
 * first start (mode 0600). The capability signing key pair is generated there too; the public
 * half is also written alone so verifiers elsewhere can use it.
 */
export async function loadOrCreateCredentials(dataDir: string, configured: string | undefined): Promise<Credentials> {
  const dir = path.join(dataDir, 'keys');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyFile = path.join(dir, 'capability-signing.jwk.json');
  const publicKeyFile = path.join(dir, 'capability-signing.public.jwk.json');
  let signing: SigningKeyPair;
  if (existsSync(keyFile)) {
    signing = JSON.parse(readFileSync(keyFile, 'utf8')) as { privateJwk: JWK; publicJwk: JWK };
  } else {
    signing = await generateSigningKeyPair();
    writeSecret(keyFile, JSON.stringify(signing));
    writeFileSync(publicKeyFile, JSON.stringify(signing.publicJwk));
  }
  if (configured !== undefined) return { issuerCredential: configured, signing, publicKeyFile };
  const credentialFile = path.join(dataDir, 'issuer-credential');
  if (!existsSync(credentialFile)) writeSecret(credentialFile, `gmi_${randomBytes(32).toString('base64url')}\n`);
  return { issuerCredential: readFileSync(credentialFile, 'utf8').trim(), issuerCredentialFile: credentialFile, signing, publicKeyFile };
}
