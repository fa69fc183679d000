import { isCryptoError, type RotationResult } from '@gm/crypto';
import { PolicySetError } from '@gm/policy';
import { isPartitionCountMismatch } from '@gm/bus';
import { shutdownTracing, tracingRequested, tracingStarted } from '@gm/observability';
import PinoPretty from 'pino-pretty';
import { DEFAULT_CONSOLE_DIR, consoleBuiltIn } from '@gm/retrieval-broker';

const rotated = (r: RotationResult | undefined): string => (r === undefined ? '' : ` — re-wrapped ${r.rewrapped} subject keys`);
import { ConfigError, loadConfig } from './config.ts';
import { startEmbeddedRuntime } from './runtime.ts';

/** `pnpm start`: the embedded runtime — every service in this process on local, durable stores. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (tracingRequested(process.env) && !tracingStarted()) {
    process.stderr.write('OTEL_* asks for traces, but this process was not started with --import ./packages/observability/src/register-tracing.ts: no traces (docs/operations.md#traces)\n');
  }
  const started = performance.now();
  // A person at a terminal reads lines, a collector reads JSON (docs/configuration.md, MEMORY_LOG_FORMAT).
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
  const runtime = await startEmbeddedRuntime(config, {
    ...(pretty ? { logDestination: PinoPretty({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, destination: 1 }) } : {}),
    // A runtime whose pipeline died admits no write: stop, for the supervisor to start it again.
    onPipelineFailure: () => process.exit(1),
  }).catch((err: unknown) => {
    if (err instanceof PolicySetError) {
      process.stderr.write(`invalid policy set: ${err.message}\n`);
      process.exit(2);
    }
    if (isPartitionCountMismatch(err)) {
      process.stderr.write(`the data directory's log does not match MEMORY_PARTITIONS: ${err.message}\n`);
      process.exit(2);
    }
    // A missing, malformed or wrong master key: nothing was read or written with it.
    if (isCryptoError(err, 'MASTER_KEY_CONFIG') || isCryptoError(err, 'MASTER_KEY_MISMATCH')) {
      process.stderr.write(`master key problem (${err.reason}): ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  });
  // Before the banner: a launcher that stops us as soon as it reads it must get a graceful stop,
  // not the default action of a signal nobody handles yet.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    runtime.log.info({ signal }, 'shutting down');
    runtime
      .close()
      // The last spans leave before the process does (docs/operations.md#traces).
      .then(() => shutdownTracing())
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        runtime.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const credentialHint = runtime.credentials.issuerCredentialFile
    ? `issuer credential: ${runtime.credentials.issuerCredentialFile}`
    : 'issuer credential: from MEMORY_ISSUER_CREDENTIAL';
  process.stderr.write(
    [
      '',
      `governed memory (embedded runtime) listening on ${runtime.url}`,
      `data directory:    ${config.dataDir}`,
      credentialHint,
      `signing key (pub): ${runtime.credentials.publicKeyFile}`,
      `receipt key (pub): ${runtime.credentials.receiptPublicKeyFile}`,
      // Where the key lies is told once, by the runtime's warning above the banner (runtime.ts).
      `master keys:       ${runtime.masterKeySource} (active "${runtime.crypto.masterKeys.active}")${rotated(runtime.crypto.rotation)}`,
      `console:           ${consoleBuiltIn(config.consoleDir ?? DEFAULT_CONSOLE_DIR) ? `${runtime.url}/console/` : 'not built (pnpm --filter @gm/console build)'}`,
      `pipeline:          ${config.pipeline === 'thread' ? 'its own thread' : 'the HTTP thread'} (MEMORY_PIPELINE=${config.pipeline})`,
      `started in ${Math.round(performance.now() - started)} ms — Ctrl-C to stop`,
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
