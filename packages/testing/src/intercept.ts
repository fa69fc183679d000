/** The function type of an adapter's method. */
type Method<T, K extends keyof T> = T[K] extends (...args: infer A) => infer R ? (...args: A) => R : never;

/**
 * The adapter with one method replaced by `around`, which gets the original (bound to the
 * adapter) and may call it before, after or not at all: a spec that must see when a service
 * reaches a call, or hold it there, without a double of the whole port.
 */
export function intercept<T extends object, K extends keyof T>(
  target: T, method: K, around: (original: Method<T, K>, ...args: Parameters<Method<T, K>>) => ReturnType<Method<T, K>>,
): T {
  const original = (target[method] as Method<T, K>).bind(target) as Method<T, K>;
  const replaced = (...args: Parameters<Method<T, K>>) => around(original, ...args);
  return new Proxy(target, { get: (t, name, receiver) => (name === method ? replaced : Reflect.get(t, name, receiver)) });
}
