import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs with ids and decisions only (§10). Authorization headers and bodies are never
 * serialised; redact is a second line of defence for anything that slips through.
 */
export function createLogger(options: { level?: string; name: string; destination?: NodeJS.WritableStream }): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'token', 'content', 'query'], censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
    },
    options.destination ?? process.stdout,
  );
}
