import type { FastifyInstance } from 'fastify';
import { RuntimeProofQuery, socketAddress } from '@gm/config';
import type { BrokerDeps } from '../deps.ts';
import { parseQuery } from '../http.ts';

/**
 * The runtime's proof of who it is (design §9.2), public: a client that found no configured
 * address checks it before sending a secret. Fixed cost (one Ed25519 signature), nothing read
 * from any store, no secret in the answer, and nothing it signs can pass for a capability.
 */
export function runtimeProofRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  // The path is RUNTIME_PROOF_PATH, the clients'; written out, as every route file does, for §9's table.
  app.get('/v1/runtime-proof', async (request) => {
    const { nonce } = parseQuery(RuntimeProofQuery, request);
    // The address this connection reached, as the socket has it, never a header the caller wrote.
    return deps.prover.prove(socketAddress(request.socket.localAddress, request.socket.localPort), nonce);
  });
}
