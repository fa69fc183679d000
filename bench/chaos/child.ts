/**
 * A command run to its end as a child process, never synchronously: the load runs in this
 * process, and a node start blocking its event loop for 20 s made answers that had arrived look
 * unanswered (their client timeouts fire before their sockets are read).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Its exit code (or signal) and, with `capture`, its stdout; otherwise stdout goes to stderr as it comes. stderr is inherited. */
export function runChild(
  command: string, args: readonly string[], options: { capture: boolean; env?: Record<string, string> },
): Promise<{ code: number | string | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', options.capture ? 'pipe' : 2, 'inherit'], timeout: 10 * 60_000,
    });
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? signal, stdout }));
  });
}
