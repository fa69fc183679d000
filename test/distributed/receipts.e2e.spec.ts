import { DistributedEnv } from '@gm/config';
import { openBus } from '@gm/adapters';
import { receiptsSuite } from '../e2e/suites/receipts.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's receipts suite, unchanged, on the seven processes and real engines. */
receiptsSuite(
  () => startDistributedTestRuntime(),
  async (rt) => {
    const bus = await openBus(DistributedEnv.parse(rt.stack.env), 'receipts-e2e');
    return { bus, close: () => bus.close() };
  },
);
