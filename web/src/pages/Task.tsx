import { api } from "../api";
import { Link } from "../router";
import { useSession } from "../session";
import { Amount, ErrorBox, Loading, Page, Status, formatTime, useLoad } from "../ui";

/** One task: its public terms, its state, and its timeline (the poster sees the full history and the output). */
export default function Task({ taskHash }: { taskHash: string }) {
  const { session } = useSession();
  const task = useLoad(() => api.task(taskHash, session?.token), [taskHash, session?.token]);
  const view = task.data;
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

function Timeline({ view }: { view: NonNullable<Awaited<ReturnType<typeof api.task>>> }) {
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
