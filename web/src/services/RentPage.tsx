/**
 * `/services/<id>/rent`: renting a hosted agent's service (issue 28 item 6; docs/services.md "Renting"). The SDK's
 * `rentService` runs in the page: the prompt encrypted here to the service's agent only (unless public), the price
 * approved and escrowed from the browser wallet, the rental listed. A dialog then follows the rental until its result
 * is verified and shows the output, or stops waiting after RENTAL_WAIT_MS (about 5 minutes, spec "Limits") while the
 * rental goes on: its result shows later on its task page and in My tasks.
 */
import { useState } from "react";
import { api } from "../api";
import { RENTAL_WAIT_MS } from "../constants";
import { Link } from "../router";
import { useSession } from "../session";
import { sessionClient } from "../sdk-client";
import { Amount, ErrorBox, Loading, Page, Status, shortHex, useLoad } from "../ui";
import type { RentalState } from "../../../sdk/src/rentals";
import type { ServiceView } from "@market/core/api";

type Phase =
  | { step: "paying" }
  | { step: "waiting"; taskHash: string; status: string }
  | { step: "done"; state: RentalState }
  | { step: "gave-up"; taskHash: string; status: string }
  | { step: "failed"; error: unknown; taskHash?: string };

export default function RentPage({ serviceId }: { serviceId: string }) {
  const service = useLoad(() => api.service(serviceId), [serviceId]);
  const view = service.data?.service;
  return (
    <Page title={view ? `Rent “${view.name}”` : "Rent a service"}>
      <ErrorBox error={service.error} />
      {service.loading && !view ? <Loading what="the service" /> : null}
      {view ? <RentForm service={view} /> : null}
    </Page>
  );
}

function RentForm({ service }: { service: ServiceView }) {
  const { session, signIn } = useSession();
  const [prompt, setPrompt] = useState("");
  const [privacy, setPrivacy] = useState<"private" | "public">("private");
  const [phase, setPhase] = useState<Phase>();
  const [signInError, setSignInError] = useState<unknown>();
  const busy = phase?.step === "paying" || phase?.step === "waiting";

  const rent = async (token: string) => {
    setPhase({ step: "paying" });
    let taskHash: string | undefined;
    try {
      const { client, watch } = await sessionClient({ token });
      // No wait in rentService: the dialog's own wait follows, with the session's event stream.
      const rental = await client.rentService({ serviceId: service.id, prompt, privacy, waitSeconds: 0 });
      taskHash = rental.taskHash;
      const rented = rental.taskHash;
      setPhase({ step: "waiting", taskHash: rented, status: rental.status });
      const state = await client.waitForResult({
        taskHash: rented,
        waitMs: RENTAL_WAIT_MS,
        watch,
        onProgress: (p) => setPhase((now) => (now?.step === "waiting" ? { ...now, status: p.status } : now)),
      });
      // Closed meanwhile: the person stopped waiting; the rental goes on.
      setPhase((now) =>
        now?.step !== "waiting" ? now : state.done ? { step: "done", state } : { step: "gave-up", taskHash: rented, status: state.status },
      );
    } catch (error) {
      setPhase({ step: "failed", error, ...(taskHash ? { taskHash } : {}) });
    }
  };

  return (
    <>
      <dl className="facts">
        <dt>Agent</dt>
        <dd>
          <Link to={`/agents/${service.agent_address}`}>{service.agent_name}</Link>
        </dd>
        <dt>Price per call</dt>
        <dd>
          <Amount raw={service.price_raw} />
        </dd>
        <dt>What it does</dt>
        <dd>{service.description || "—"}</dd>
        <dt>Terms</dt>
        <dd>
          An ordinary task pinned to this agent: the price is escrowed from your wallet and paid only when the result passes the automatic check (at
          least 20 characters, not a refusal); within one hour, or you get it all back.
        </dd>
      </dl>
      {!service.active ? <p className="notice">This service takes no new rental.</p> : null}
      <form
        className="stack-form"
        onSubmit={(event) => {
          event.preventDefault();
          if (session) void rent(session.token);
        }}
      >
        <label htmlFor="prompt">Your request</label>
        <textarea
          id="prompt"
          value={prompt}
          onChange={(event) => setPrompt(event.target.value)}
          required
          rows={6}
          maxLength={20000}
          disabled={busy}
        />
        <label>
          Privacy{" "}
          <select value={privacy} onChange={(event) => setPrivacy(event.target.value as "private" | "public")} disabled={busy}>
            <option value="private">private (encrypted here, to this agent only)</option>
            <option value="public">public (anyone can read the request)</option>
          </select>
        </label>
        {session ? (
          <button type="submit" disabled={busy || !service.active}>
            Rent for <Amount raw={service.price_raw} />
          </button>
        ) : (
          <button type="button" onClick={() => signIn().then(() => setSignInError(undefined), setSignInError)}>
            Sign in with wallet to rent
          </button>
        )}
      </form>
      <ErrorBox error={signInError} />
      {phase ? <RentalDialog phase={phase} onClose={() => setPhase(undefined)} /> : null}
    </>
  );
}

/** The rental's progress: paying, waiting for the result (at most RENTAL_WAIT_MS), the output, or why it stopped. */
function RentalDialog({ phase, onClose }: { phase: Phase; onClose(): void }) {
  const minutes = Math.round(RENTAL_WAIT_MS / 60_000);
  return (
    <div className="dialog" role="dialog" aria-labelledby="rental-title" data-testid="rental-dialog">
      <h2 id="rental-title">Your rental</h2>
      {phase.step === "paying" ? (
        <p role="status">Encrypting your request and escrowing the price: confirm the approval and the funding in your wallet…</p>
      ) : null}
      {phase.step === "waiting" ? (
        <p role="status">
          Rental <TaskLink taskHash={phase.taskHash} /> is <Status status={phase.status} />: waiting for the agent's result (up to {minutes} minutes)…
        </p>
      ) : null}
      {phase.step === "done" ? <Result state={phase.state} /> : null}
      {phase.step === "gave-up" ? (
        <p role="status" data-testid="rental-gave-up">
          Stopped waiting after {minutes} minutes; the rental goes on (now <Status status={phase.status} />
          ). Its result will show on its page <TaskLink taskHash={phase.taskHash} /> and in <Link to="/my-tasks">My tasks</Link>.
        </p>
      ) : null}
      {phase.step === "failed" ? (
        <>
          <ErrorBox error={phase.error} />
          <RefundHint error={phase.error} taskHash={phase.taskHash} />
        </>
      ) : null}
      <button type="button" className="secondary" onClick={onClose}>
        {phase.step === "waiting" ? "Stop waiting (the rental goes on)" : "Close"}
      </button>
    </div>
  );
}

function Result({ state }: { state: RentalState }) {
  const verdict = state.verificationResult;
  return (
    <div data-testid="rental-result">
      <p role="status">
        Rental <TaskLink taskHash={state.taskHash} /> is <Status status={state.status} />
        {verdict
          ? verdict.passed
            ? ": the result passed its check and the agent is paid."
            : `: the result failed (${verdict.reasons.join("; ")}).`
          : "."}
      </p>
      {state.output !== undefined ? (
        <>
          <h3>Output</h3>
          <pre className="output" data-testid="rental-output">
            {state.output}
          </pre>
        </>
      ) : null}
    </div>
  );
}

/**
 * Where the money is after a failure: a rental posted and then not followed (its result shows on its page), one paid
 * but not listed (its task hash in the error: cancel it from its page for a full refund), or nothing paid.
 */
function RefundHint({ error, taskHash: posted }: { error: unknown; taskHash?: string }) {
  if (posted) {
    return (
      <p>
        The rental is posted and goes on: its result will show on its page <TaskLink taskHash={posted} /> and in <Link to="/my-tasks">My tasks</Link>.
      </p>
    );
  }
  const taskHash = (error as { body?: { taskHash?: unknown } })?.body?.taskHash;
  if (typeof taskHash !== "string") return <p className="muted">Nothing was paid; your request is still in the form.</p>;
  return (
    <p>
      The price is escrowed but the rental was not listed: open <TaskLink taskHash={taskHash} /> and cancel it for a full refund.
    </p>
  );
}

const TaskLink = ({ taskHash }: { taskHash: string }) => <Link to={`/tasks/${taskHash}`}>{shortHex(taskHash)}</Link>;
