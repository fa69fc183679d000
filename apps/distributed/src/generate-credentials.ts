import path from 'node:path';
import { loadOrCreateCredentials, loadOrCreateMasterKeys } from '@gm/embedded';

/**
 * Creates (once) the capability and receipt signing key pairs, the issuer credential and the master key file
 * (MEMORY_MASTER_KEY_FILE of every service) in a directory, for
 * deployments where the retrieval-broker reads them from files (docker-compose, the stack).
 * Usage: node --import tsx apps/distributed/src/generate-credentials.ts <dir>
 */
const dir = path.resolve(process.argv[2] ?? '.data-distributed');
const credentials = await loadOrCreateCredentials(dir, undefined);
const master = loadOrCreateMasterKeys(dir, {}, false);
process.stdout.write(`signing key: ${path.join(dir, 'keys', 'capability-signing.jwk.json')}\nreceipt key: ${credentials.receiptKeyFile} (public: ${credentials.receiptPublicKeyFile})\nissuer credential: ${credentials.issuerCredentialFile ?? '(from MEMORY_ISSUER_CREDENTIAL)'}\nmaster keys: ${master.source} (active "${master.masterKeys.active}")\n`);
