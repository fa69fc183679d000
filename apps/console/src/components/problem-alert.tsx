import type { ComponentChildren } from 'preact';
import type { Problem } from '../api-types.ts';

/** A problem+json answer as the server gave it: title, code and detail, announced at once. */
export function ProblemAlert({ problem, lead, children }: { problem: Problem; lead?: string; children?: ComponentChildren }) {
  return (
    <div class="problem" role="alert" data-testid="problem" data-code={problem.code} data-status={problem.status}>
      {lead !== undefined && <p class="problem-lead">{lead}</p>}
      <p class="problem-title">
        <strong>{problem.title}</strong> <code>{problem.code}</code>
        {problem.status > 0 && <span class="muted"> (HTTP {problem.status})</span>}
      </p>
      {problem.detail !== '' && <p class="problem-detail">{problem.detail}</p>}
      {problem.requestId !== undefined && <p class="muted">request id <code>{problem.requestId}</code></p>}
      {children}
    </div>
  );
}

