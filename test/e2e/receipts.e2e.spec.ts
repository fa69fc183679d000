import { startTestRuntime } from './harness.ts';
import { receiptsSuite } from './suites/receipts.suite.ts';

/** Receipts and legal holds on the embedded runtime; test/distributed runs the same suite on the stack. */
receiptsSuite(() => startTestRuntime(), async (rt) => ({ bus: rt.runtime.bus, close: async () => undefined }));
