/**
 * The execArgv of a worker thread whose entry is TypeScript: this process's own under the tsx
 * loader when it has it (`pnpm start`, and any worker started from such a process), otherwise
 * (a test runner transforming on its own) with the loader added.
 */
export function typeScriptWorkerExecArgv(): string[] {
  const hasTsx = process.execArgv.some((arg, i, all) => arg.includes('tsx') && (i === 0 || all[i - 1] === '--import' || arg.startsWith('--import')));
  return hasTsx ? process.execArgv : [...process.execArgv, '--import', 'tsx'];
}
