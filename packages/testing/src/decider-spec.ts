import { expect } from 'vitest';

/** The shape every decider has (style: decide / evolve / initialState). */
export interface DeciderShape<C, E, S, R> {
  decide(command: C, state: S): R;
  evolve(state: S, event: E): S;
  initialState(): S;
}

/**
 * given(events).when(command).then(expected) for deciders:
 *   spec.given([written]).when(promote).then((events) => expect(events).toEqual([...]))
 *   spec.given([written]).when(promote).thenThrows('MEM_CONFLICT')
 */
export function deciderSpec<C, E, S, R>(decider: DeciderShape<C, E, S, R>) {
  return {
    given(events: E[]) {
      const state = events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
      return {
        state,
        when(command: C) {
          const run = () => decider.decide(command, state);
          return {
            then(assert: (result: R, state: S) => void): R {
              const result = run();
              assert(result, state);
              return result;
            },
            /** Expects a coded error; the state is unchanged by construction (no events). */
            thenThrows(code: string): void {
              let caught: unknown;
              try {
                run();
              } catch (e) {
                caught = e;
              }
              expect(caught, `expected ${code}`).toBeDefined();
              expect((caught as { code?: unknown }).code).toBe(code);
            },
          };
        },
      };
    },
  };
}
