import { useEffect, useRef, useState } from 'preact/hooks';
import { api, asProblem } from '../api.ts';
import { decodeJsonSegment } from '../base64url.ts';
import { verdictText, verifyReceiptJws, type PublicJwk, type Verdict } from '../receipts.ts';

/** The public receipt keys (a JWKS), asked fresh for each verification: a rotation shows at once. */
async function receiptKeys(): Promise<PublicJwk[] | string> {
  try {
    const { keys } = await api<{ keys: PublicJwk[] }>('/v1/receipt-keys', { anonymous: true });
    return Array.isArray(keys) ? keys : 'the receipt keys are not a JWKS';
  } catch (err) {
    const problem = asProblem(err);
    return `the receipt keys could not be fetched (${problem.code}: ${problem.title})`;
  }
}

/** Verifies a compact JWS against the published keys; a failure to verify is a verdict, never a crash. */
export async function verifyAgainstPublishedKeys(jws: string): Promise<Verdict> {
  const keys = await receiptKeys();
  if (typeof keys === 'string') return { valid: false, reason: keys };
  try {
    return await verifyReceiptJws(jws, keys);
  } catch (err) {
    return { valid: false, reason: `verification failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** The payload a JWS carries, decoded whatever its signature (for display beside the verdict). */
export const decodedPayload = (jws: string): unknown => decodeJsonSegment(jws.trim().split('.')[1] ?? '');

export function VerdictLine({ verdict, testId }: { verdict: Verdict | 'checking'; testId: string }) {
  if (verdict === 'checking') {
    return <p class="verdict" data-testid={testId} data-verdict="checking" aria-live="polite">checking the signature…</p>;
  }
  return (
    <p class={`verdict ${verdict.valid ? 'ok' : 'bad'}`} data-testid={testId} data-verdict={verdict.valid ? 'valid' : 'invalid'} aria-live="polite">
      {verdictText(verdict)}
    </p>
  );
}

export function PayloadView({ payload, testId }: { payload: unknown; testId: string }) {
  if (payload === null || payload === undefined) return <p class="muted">The payload does not decode.</p>;
  return <pre class="payload" data-testid={testId} tabIndex={0} aria-label="Decoded receipt payload">{JSON.stringify(payload, null, 2)}</pre>;
}

/** The compact JWS as a file, `<jobId>.jws`, from a Blob URL (nothing leaves the browser). */
export function DownloadJws({ jobId, jws }: { jobId: string; jws: string }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    const made = URL.createObjectURL(new Blob([jws], { type: 'application/jose' }));
    setUrl(made);
    return () => URL.revokeObjectURL(made);
  }, [jws]);
  if (url === null) return null;
  return <a class="button" href={url} download={`${jobId}.jws`} data-testid="download-jws">Download JWS</a>;
}

/** Paste any compact JWS (a receipt kept offline, or a tampered one) and verify it against the same keys. */
export function PastedReceipt() {
  const field = useRef<HTMLTextAreaElement>(null);
  const [verdict, setVerdict] = useState<Verdict | 'checking' | null>(null);
  const [payload, setPayload] = useState<unknown>(undefined);

  const verify = async (event: Event) => {
    event.preventDefault();
    const jws = field.current?.value ?? '';
    setVerdict('checking');
    setPayload(decodedPayload(jws));
    setVerdict(jws.trim() === '' ? { valid: false, reason: 'nothing to verify: paste a compact JWS' } : await verifyAgainstPublishedKeys(jws));
  };

  return (
    <section aria-labelledby="paste-heading" class="card">
      <h2 id="paste-heading">Verify a receipt</h2>
      <form onSubmit={(e) => void verify(e)} class="stack">
        <label for="paste-receipt">Verify a receipt (compact JWS)</label>
        <textarea id="paste-receipt" ref={field} data-testid="pasted-receipt" rows={4} autocomplete="off" spellcheck={false} />
        <div>
          <button type="submit" data-testid="verify-pasted">Verify</button>
        </div>
      </form>
      {verdict !== null && <VerdictLine verdict={verdict} testId="pasted-verdict" />}
      {verdict !== null && verdict !== 'checking' && <PayloadView payload={payload} testId="pasted-payload" />}
    </section>
  );
}
