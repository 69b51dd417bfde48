import { useState } from "react";
import { getAddress } from "viem";
import { api } from "../api";
import { sendSettlement, type SettleAction } from "../chain";
import { Link } from "../router";
import { useSession } from "../session";
import { useTaskEvents } from "../events";
import { Amount, ErrorBox, Loading, Page, Status, formatTime, useLoad } from "../ui";
import type { TaskView } from "@market/core/api";

/** One task: its public terms, its state, and its timeline (the poster sees the full history and the output). */
export default function Task({ taskHash }: { taskHash: string }) {
  const { session } = useSession();
  const task = useLoad(() => api.task(taskHash, session?.token), [taskHash, session?.token]);
  const view = task.data;
  const isPoster = session !== undefined && view !== undefined && getAddress(view.meta.poster) === getAddress(session.address);
  // The poster follows the task live: every event of it reloads the view.
  useTaskEvents(isPoster ? session.token : undefined, [taskHash], task.reload);
  return (
    <Page title="Task">
      <ErrorBox error={task.error} />
      {task.loading && !view ? <Loading what="the task" /> : null}
      {view ? (
        <>
          <dl className="facts">
            <dt>Task hash</dt>
            <dd>
              <code>{view.meta.taskHash}</code>
            </dd>
            <dt>Status</dt>
            <dd>
              <Status status={view.state.status} />
            </dd>
            <dt>Reward</dt>
            <dd>
              <Amount raw={view.meta.reward.amount} decimals={view.meta.reward.unit.decimals} symbol={view.meta.reward.unit.symbol} />
            </dd>
            <dt>Chain</dt>
            <dd>{view.meta.chain}</dd>
            <dt>Poster</dt>
            <dd>
              <code>{view.meta.poster}</code>
            </dd>
            {view.state.worker ? (
              <>
                <dt>Worker</dt>
                <dd>
                  <Link to={`/agents/${view.state.worker}`}>
                    <code>{view.state.worker}</code>
                  </Link>
                </dd>
              </>
            ) : null}
            <dt>Privacy</dt>
            <dd>{view.meta.privacy}</dd>
            <dt>Verification</dt>
            <dd>{view.meta.verificationMode}</dd>
            <dt>Capabilities</dt>
            <dd>{view.meta.requiredCapabilities.join(", ") || "any"}</dd>
            <dt>Listed</dt>
            <dd>{formatTime(view.meta.listedAt)}</dd>
            <dt>Deadline</dt>
            <dd>{formatTime(view.meta.deadline)}</dd>
            {view.state.paid ? (
              <>
                <dt>Paid</dt>
                <dd>
                  <Amount raw={view.state.paid.worker} /> to the worker, <Amount raw={view.state.paid.fee} /> fee
                </dd>
              </>
            ) : null}
          </dl>
          {isPoster ? <PosterPanel view={view} token={session.token} address={session.address} onChange={task.reload} /> : null}
          <h2>Timeline</h2>
          <Timeline view={view} />
          <h2>Brief</h2>
          {view.meta.privacy === "public" ? (
            <pre className="brief">
              {view.meta.publicBrief ?? ""}
              {view.meta.publicBriefTruncated ? "\n…(first 4,000 characters)" : ""}
            </pre>
          ) : (
            <p className="muted">This task is private: only its poster and its worker can read the brief.</p>
          )}
        </>
      ) : null}
    </Page>
  );
}

/** What only the poster sees and does: the delivered output, the manual verdict, cancel, claim after the deadline, dispute. */
function PosterPanel({ view, token, address, onChange }: { view: TaskView; token: string; address: string; onChange(): void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState<string>();
  const [reason, setReason] = useState("");
  const status = view.state.status;
  const result = view.state.resultData;
  const run = (what: string, action: () => Promise<unknown>) => {
    setBusy(what);
    setError(undefined);
    action().then(
      () => {
        setBusy(undefined);
        onChange();
      },
      (e: unknown) => {
        setError(e);
        setBusy(undefined);
      },
    );
  };
  const settle = (action: SettleAction, what: string) =>
    run(what, async () => {
      const built = await api.settle(token, view.meta.taskHash, action);
      await sendSettlement(built.unsignedTx, action, view.meta.taskHash, view.meta.chain, address);
    });
  const pastDeadline = Date.now() > view.meta.deadline;
  return (
    <section aria-labelledby="yours">
      <h2 id="yours">Your task</h2>
      {result?.output !== undefined ? (
        <>
          <h3>Output</h3>
          <pre className="output" data-testid="task-output">
            {result.output}
          </pre>
          {result.verificationResult ? (
            <p>
              Verdict: {result.verificationResult.passed ? "passed" : "failed"}
              {result.verificationResult.score !== null ? ` (score ${result.verificationResult.score})` : ""}
              {result.verificationResult.reasons.length ? ` — ${result.verificationResult.reasons.join("; ")}` : ""}
            </p>
          ) : null}
        </>
      ) : (
        <p className="muted">No output delivered yet.</p>
      )}
      {status === "awaiting_verification" && view.meta.verificationMode === "manual" ? (
        <div className="inline-form">
          <label>
            Reason (optional)
            <input value={reason} onChange={(event) => setReason(event.target.value)} maxLength={1000} />
          </label>
          <button
            type="button"
            disabled={busy !== undefined}
            onClick={() => run("approve", () => api.verdict(token, view.meta.taskHash, { passed: true, ...(reason ? { reasons: [reason] } : {}) }))}
          >
            Approve and pay
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy !== undefined}
            onClick={() => run("reject", () => api.verdict(token, view.meta.taskHash, { passed: false, ...(reason ? { reasons: [reason] } : {}) }))}
          >
            Reject
          </button>
        </div>
      ) : null}
      <div className="actions">
        {status === "open" || status === "expired" ? (
          <button type="button" className="secondary" disabled={busy !== undefined} onClick={() => settle("cancel", "cancel")}>
            Cancel and refund
          </button>
        ) : null}
        {pastDeadline && !["completed", "refunded", "cancelled", "verified"].includes(status) ? (
          <button type="button" className="secondary" disabled={busy !== undefined} onClick={() => settle("claim-timeout", "claim")}>
            Claim after the deadline
          </button>
        ) : null}
        {["failed", "awaiting_verification", "submitted"].includes(status) ? (
          <button type="button" className="secondary" disabled={busy !== undefined} onClick={() => settle("dispute", "dispute")}>
            Raise a dispute
          </button>
        ) : null}
      </div>
      {busy ? (
        <p role="status" className="muted">
          Working ({busy})… confirm in your wallet when it asks.
        </p>
      ) : null}
      <ErrorBox error={error} />
    </section>
  );
}

function Timeline({ view }: { view: TaskView }) {
  const steps = view.state.history ?? [
    { at: view.meta.listedAt, event: "listed" },
    ...(view.state.worker ? [{ at: undefined, event: `taken by ${view.state.worker}` }] : []),
    { at: undefined, event: view.state.status.replace(/_/g, " ") },
  ];
  return (
    <ol className="timeline">
      {steps.map((step, i) => (
        <li key={i}>
          <span className="when">{step.at ? formatTime(step.at) : "now"}</span> {step.event}
          {"reason" in step && step.reason ? <span className="muted"> ({step.reason})</span> : null}
        </li>
      ))}
    </ol>
  );
}
