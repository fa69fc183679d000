import type { CapabilityView } from './capability.ts';

/**
 * The signed-in capability. Held in this module only: never in storage, a cookie or the URL,
 * so a reload or sign-out forgets it.
 */
export interface Session {
  token: string;
  view: CapabilityView;
}

let current: Session | null = null;
const listeners = new Set<() => void>();

export const currentSession = (): Session | null => current;

export function signIn(session: Session): void {
  current = session;
  notify();
}

export function signOut(): void {
  current = null;
  notify();
}

export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function notify(): void {
  for (const listener of listeners) listener();
}
