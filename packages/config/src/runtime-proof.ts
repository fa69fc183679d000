import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type JsonWebKeyInput, type KeyObject } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * The runtime's proof that it is the runtime of a data directory (design §9.2), both halves side
 * by side so they cannot drift: a client about to send a secret to an address nobody configured
 * asks the server there to sign a fresh nonce, and checks the signature with the public key the
 * runtime keeps in the data directory. The key is the capability signing key
 * (`keys/capability-signing.public.jwk.json`): the broker holds it on both runtimes. Reusing it is
 * safe because what it signs here can never be taken for a capability — see `proofMessage`.
 */
export const RUNTIME_PROOF_PATH = '/v1/runtime-proof';

/** 32 random bytes, base64url: a nonce the server cannot have seen before, and nothing else. */
export const RuntimeProofNonce = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be 32 bytes, base64url (43 characters)');
export const RuntimeProofQuery = z.object({ nonce: RuntimeProofNonce }).strict();
export const RuntimeProof = z.object({
  address: z.string().max(64).meta({ description: 'the host and port this connection reached, as the server saw them (`127.0.0.1:8080`, `[::1]:8080`)' }),
  signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/).meta({ description: 'Ed25519 over the proof message, base64url' }),
}).strict();
export type RuntimeProof = z.infer<typeof RuntimeProof>;

/** The public half of the key that signs proofs, in the data directory. */
export const proofKeyFile = (dataDir: string) => path.join(dataDir, 'keys', 'capability-signing.public.jwk.json');

const CONTEXT = 'governed-memory runtime proof v1';

/**
 * What is signed. It starts with a fixed context holding spaces and ends in a newline, which no
 * JWS signing input (base64url and dots only) can contain: no proof is ever a valid signature of a
 * capability. It names the address the connection reached, so a proof relayed from the genuine
 * runtime on another port does not vouch for the relay.
 */
export const proofMessage = (address: string, nonce: string): Buffer => Buffer.from(`${CONTEXT}\n${address}\n${nonce}\n`, 'utf8');

/** `host:port` of a socket's end, IPv4-mapped addresses as IPv4 and IPv6 in brackets (as a URL writes it). */
export function socketAddress(host: string | undefined, port: number | undefined): string {
  const plain = (host ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
  return `${plain.includes(':') ? `[${plain}]` : plain}:${port ?? 0}`;
}

/** The server's half: signs for the address its socket was reached on. */
export class RuntimeProver {
  private readonly key: KeyObject;

  constructor(privateJwk: object) {
    this.key = createPrivateKey({ key: privateJwk, format: 'jwk' } as JsonWebKeyInput);
  }

  prove(address: string, nonce: string): RuntimeProof {
    return { address, signature: sign(null, proofMessage(address, nonce), this.key).toString('base64url') };
  }
}

/** Thrown when the server at a default address could not prove it is the runtime of the data directory. */
export class UnprovenServiceError extends Error {
  readonly code = 'SERVICE_UNPROVEN';
}

/**
 * The client's half. Resolves when the server at `url` signs a fresh nonce, for `url`'s own host
 * and port, with the key in `dataDir`; else throws UnprovenServiceError with one line naming why
 * and what to set. Sends no credential: only the nonce.
 */
export async function proveRuntime(url: string, dataDir: string, setting = 'MEMORY_URL'): Promise<void> {
  const fail = (why: string): never => {
    throw new UnprovenServiceError(`the server at ${url} could not prove it is the runtime of ${dataDir} (${why}); set ${setting} to the runtime's address`);
  };
  const keyFile = proofKeyFile(dataDir);
  const key = trustedPublicKey(keyFile) ?? fail(`no key to check it with: ${keyFile} is missing, or someone else could have written it`);
  const { hostname, port } = new URL(url);
  const expected = socketAddress(hostname.replace(/^\[|\]$/g, ''), Number(port || 80));
  const nonce = randomBytes(32).toString('base64url');
  let response: Response;
  try {
    // A stranger that never answers must not hang the client; the runtime answers at once.
    response = await fetch(`${url}${RUNTIME_PROOF_PATH}?nonce=${nonce}`, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    return fail(`nothing answers there: ${cause}`);
  }
  if (response.status !== 200) return fail(`it answered ${response.status} to GET ${RUNTIME_PROOF_PATH}`);
  const proof = RuntimeProof.safeParse(await response.json().catch(() => undefined));
  if (!proof.success) return fail('its answer is not a proof');
  if (proof.data.address !== expected) return fail(`its proof names ${proof.data.address}, not ${expected}: it passed on another server's answer`);
  if (!verify(null, proofMessage(expected, nonce), key, Buffer.from(proof.data.signature, 'base64url'))) {
    return fail(`its signature does not verify with ${keyFile}`);
  }
}

/** The public key, if its file and directory are this user's and nobody else may write them (as for the address file). */
function trustedPublicKey(file: string): KeyObject | undefined {
  const uid = process.getuid?.();
  const safe = [path.dirname(path.dirname(file)), path.dirname(file), file].every((p) => {
    const stats = lstatSync(p, { throwIfNoEntry: false });
    return stats !== undefined && !stats.isSymbolicLink() && (uid === undefined || stats.uid === uid) && (stats.mode & 0o022) === 0;
  });
  if (!safe) return undefined;
  try {
    return createPublicKey({ key: JSON.parse(readFileSync(file, 'utf8')) as object, format: 'jwk' } as JsonWebKeyInput);
  } catch {
    return undefined;
  }
}
