import { PolicySetError, loadPolicySet, type CompiledPolicySet } from './cedar/policy-set.ts';

/**
 * Loads and validates the Cedar policy set (the shipped one, or MEMORY_POLICY_DIR's) before
 * anything opens; an invalid one ends the process with code 2 and the file, line and problem
 * on stderr — like an invalid environment, never a half-started service.
 */
export function loadPolicySetOrExit(dir: string | undefined, service: string): CompiledPolicySet {
  try {
    return loadPolicySet(dir);
  } catch (err) {
    if (!(err instanceof PolicySetError)) throw err;
    process.stderr.write(`${service}: invalid policy set: ${err.message}\n`);
    process.exit(2);
  }
}
