/** Where both adapters report what they recover from on their own (a failed commit, a retry). */
export interface BusLogger {
  warn(obj: object, msg: string): void;
}

/** Without a logger a failing consumer must still be visible, so warnings go to stderr. */
export const stderrLogger: BusLogger = {
  warn: (obj, msg) => console.warn(JSON.stringify({ level: 'warn', time: Date.now(), ...obj, msg })),
};

/** An error's message, for a log field or a wrapping error. */
export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
