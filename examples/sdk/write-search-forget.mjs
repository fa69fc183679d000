// The SDK's whole round trip (docs/agents.md#the-sdk-packagesclient): write a memory, find it,
// forget its subject, and wait for the signed receipt that says every copy is gone (§8).
//
// Plain JavaScript on purpose: it runs unchanged with `node` wherever @gm/client is installed
// from its tarball (the packed-SDK spec runs this very file), and from the repository with
//   MEMORY_URL=http://127.0.0.1:8080 MEMORY_TOKEN=… node --import tsx examples/sdk/write-search-forget.mjs
// It prints ids and outcomes as one JSON line, never the content.
// @ts-check
import { randomUUID } from 'node:crypto';
import { MemoryClient, readCapability } from '@gm/client';

// No default address: a capability goes only where it was told to (docs/security.md "Where clients send secrets").
const baseUrl = process.env.MEMORY_URL;
if (!baseUrl) {
  process.stderr.write('MEMORY_URL must name the runtime, e.g. http://127.0.0.1:8080 (examples/README.md)\n');
  process.exit(2);
}
// From the environment, never argv: a command line is echoed by pnpm and kept in shell history.
const token = process.env.MEMORY_TOKEN;
if (!token) {
  process.stderr.write('MEMORY_TOKEN must hold a capability with write, search, read and request_delete (examples/README.md)\n');
  process.exit(2);
}

// The capability says where it may write: the example writes to its first project, case or
// workspace (a tenant scope is for reading and forgetting across the tenant, not a place to write).
const resource = readCapability(token).scopes.find((scope) => scope.kind !== 'tenant');
if (resource === undefined) throw new Error('the capability names no project, case or workspace to write to');

// A session carries each answer's consistency token into the next request, so the search sees
// the write and the deletion job is there to follow as soon as it is accepted.
const memory = new MemoryClient({ baseUrl, capability: token }).session();
const marker = `sdkexample${randomUUID().replaceAll('-', '')}`;
const subjectId = `example-subject-${randomUUID()}`;

const written = await memory.remember({
  subjectId, resource, kind: 'fact', trust: 'trusted',
  content: `The example customer prefers email (${marker})`,
  provenance: [{ source: 'user', observedAt: new Date().toISOString() }],
});
// Lexical: by words, so the example needs no embedding model on the server.
const found = async () => (await memory.search({ query: marker, mode: 'lexical' })).items.some((item) => item.recordId === written.id);
const foundBeforeForget = await found();

const { jobId } = await memory.forget(subjectId);
// Asks again while the receipt is not signed yet (409 MEM_NOT_YET_AVAILABLE), for up to 2 minutes.
const { payload } = await memory.waitForReceipt(jobId, { intervalMs: 200 });

const result = {
  recordId: written.id, status: written.status, foundBeforeForget,
  jobId, receipt: { status: payload.status, recordIds: payload.recordIds },
  foundAfterForget: await found(),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
if (!foundBeforeForget || payload.status !== 'verified' || result.foundAfterForget) process.exitCode = 1;
