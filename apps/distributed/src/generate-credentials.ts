import path from 'node:path';
import { loadOrCreateCredentials } from '@gm/embedded';

/**
 * Creates (once) the capability and receipt signing key pairs and the issuer credential in a directory, for
 * deployments where the retrieval-broker reads them from files (docker-compose, the stack).
 * Usage: node --import tsx apps/distributed/src/generate-credentials.ts <dir>
 */
const dir = path.resolve(process.argv[2] ?? '.data-distributed');
const credentials = await loadOrCreateCredentials(dir, undefined);
process.stdout.write(`signing key: ${path.join(dir, 'keys', 'capability-signing.jwk.json')}\nreceipt key: ${credentials.receiptKeyFile} (public: ${credentials.receiptPublicKeyFile})\nissuer credential: ${credentials.issuerCredentialFile ?? '(from MEMORY_ISSUER_CREDENTIAL)'}\n`);
