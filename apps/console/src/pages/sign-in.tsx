import { useRef, useState } from 'preact/hooks';
import { decodeCapability } from '../capability.ts';
import { signIn } from '../session.ts';

/**
 * Paste a capability (a compact JWT). It stays in memory only; the console never asks for the
 * issuer credential and refuses anything that is not a JWT.
 */
export function SignInPage() {
  const input = useRef<HTMLTextAreaElement>(null);
  const [error, setError] = useState<string | null>(null);

  const submit = (event: Event) => {
    event.preventDefault();
    // Read from the field itself (not a copy in state): nothing else keeps the token around.
    const field = input.current;
    if (field === null) return;
    const token = field.value.trim().replace(/^Bearer\s+/i, '');
    const decoded = decodeCapability(token);
    if (!decoded.ok) {
      setError(decoded.reason);
      return;
    }
    field.value = '';
    signIn({ token, view: decoded.view });
  };

  return (
    <section aria-labelledby="sign-in-heading">
      <h1 id="sign-in-heading">Sign in</h1>
      <p>
        Paste a capability: the compact JWT your issuer minted (<code>memctl capability issue</code>). The console keeps it
        in this tab's memory only — reloading or signing out forgets it. It never needs the issuer credential.
      </p>
      <form onSubmit={submit} class="stack">
        <label for="capability-input">Capability (JWT)</label>
        <textarea
          id="capability-input"
          ref={input}
          data-testid="capability-input"
          rows={5}
          autocomplete="off"
          autocapitalize="off"
          spellcheck={false}
          required
          aria-describedby={error === null ? undefined : 'sign-in-error'}
        />
        <div>
          <button type="submit" data-testid="sign-in">Sign in</button>
        </div>
      </form>
      {error !== null && (
        <div id="sign-in-error" class="problem" role="alert" data-testid="problem">
          <p class="problem-title"><strong>Not a capability</strong></p>
          <p class="problem-detail">{error}</p>
        </div>
      )}
    </section>
  );
}
