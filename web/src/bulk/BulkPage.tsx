/**
 * Bulk posting (issue 28 item 4; spec "Bulk run behaviour", "Limits"): drop a CSV or JSON Lines file; every row is
 * checked here (check.ts, core/bulk) before anything is sent, bad rows flagged in place and the rest postable; the
 * totals and one confirmation; then the SDK's journaled engine (run.ts) approves once and funds per chunk with a
 * progress bar, and the results download in the CLI's results-file columns. The same file dropped again after a
 * reload or a closed tab finishes its run without paying twice.
 */
import { useEffect, useMemo, useState } from "react";
import { formatUsdc } from "@market/core/money";
import { totalsOf } from "../../../sdk/src/posting/journal/totals";
import type { Settlement } from "@market/core/api";
import type { Eip1193Provider } from "../../../sdk/src/injected";
import { browserRuns, type BrowserRunInfo } from "../../../sdk/src/posting/journal/browser";
import type { RunRow } from "../../../sdk/src/posting/journal/rows";
import { useSession } from "../session";
import { ErrorBox, Page, shortHex } from "../ui";
import { SignInPrompt } from "../pages/SignInPrompt";
import { checkBulkText, type CheckedFile } from "./check";
import { journalDb, runBulk, runName, settlementTerms, RowStatus, type BulkRunResult, type RowOutcome } from "./run";

type Dropped = { name: string; text: string; checked: CheckedFile };
type Outcome = { row: RunRow; outcome: RowOutcome };

export default function BulkPage() {
  const { session } = useSession();
  if (!session) return <SignInPrompt title="Post tasks in bulk" />;
  return <Bulk session={session} />;
}

function Bulk({ session }: { session: { token: string; address: string } }) {
  const [settlement, setSettlement] = useState<Settlement>();
  const [dropped, setDropped] = useState<Dropped>();
  const [saved, setSaved] = useState<BrowserRunInfo[]>([]);
  const [error, setError] = useState<unknown>();
  const [running, setRunning] = useState(false);
  const [progress, setProgress] = useState<{ done: number; total: number }>();
  const [notes, setNotes] = useState<string[]>([]);
  const [outcomes, setOutcomes] = useState<Outcome[]>();
  const [result, setResult] = useState<BulkRunResult>();
  /** Tasks per funding transaction: the escrow's batch (default 20) or one per task. */
  const [chunk, setChunk] = useState<number>();

  useEffect(() => {
    settlementTerms().then((t) => setSettlement(t.settlement), setError);
    void journalDb()
      .then(browserRuns)
      .then((runs) => setSaved(runs.filter((r) => !r.finishedAt && r.wallet.toLowerCase() === session.address.toLowerCase())))
      .catch(() => undefined);
  }, [session.address]);

  const open = async (file: File | undefined) => {
    if (!file) return;
    setError(undefined);
    setResult(undefined);
    setOutcomes(undefined);
    setProgress(undefined);
    setNotes([]);
    const text = await file.text();
    setDropped({ name: file.name, text, checked: checkBulkText(file.name, text) });
  };

  const checked = dropped?.checked;
  const totals = useMemo(
    () => (checked?.readable && settlement ? totalsOf(checked.rows, settlement, chunk) : undefined),
    [checked, settlement, chunk],
  );
  const resumes = dropped && saved.some((r) => r.run === runName(dropped.text, session.address));

  const post = async () => {
    if (!dropped || !checked?.readable) return;
    const ethereum = window.ethereum as Eip1193Provider | undefined;
    if (!ethereum) {
      setError({ code: "NO_WALLET", message: "No browser wallet was found: install one (MetaMask, Rabby…) and reload." });
      return;
    }
    setRunning(true);
    setError(undefined);
    try {
      const done = await runBulk({
        name: dropped.name,
        text: dropped.text,
        rows: checked.rows,
        session,
        ethereum,
        ...(chunk ? { chunk } : {}),
        onNote: (line) => setNotes((n) => [...n, line]),
        onProgress: (d, total) => setProgress({ done: d, total }),
        onOutcomes: (o) => setOutcomes([...o]),
      });
      setResult(done);
    } catch (e) {
      setError(e);
    } finally {
      setRunning(false);
    }
  };

  return (
    <Page title="Post tasks in bulk">
      <p className="muted">
        A CSV or JSON Lines file, one task a row (the columns of the market CLI's task files: <code>instructions</code>, <code>reward</code> or{" "}
        <code>amount</code>, <code>privacy</code>, <code>duration</code>, <code>capabilities</code>…). Every row is checked here before anything is
        sent; bad rows are flagged and the rest can be posted. At most 1,000 rows, briefs up to 20,000 characters.
      </p>
      <label
        className="dropzone"
        data-testid="dropzone"
        onDragOver={(e) => e.preventDefault()}
        onDrop={(e) => {
          e.preventDefault();
          void open(e.dataTransfer.files[0]);
        }}
      >
        Drop a task file here, or choose one:{" "}
        <input type="file" accept=".csv,.jsonl,.ndjson" disabled={running} onChange={(e) => void open(e.target.files?.[0])} />
      </label>
      {saved.length > 0 && !dropped ? (
        <div className="notice" data-testid="saved-runs">
          Unfinished runs in this browser (drop the same file again to finish it without paying twice):
          <ul>
            {saved.map((r) => (
              <li key={r.run}>
                {r.file} ({r.rows} rows, started {r.startedAt.slice(0, 16).replace("T", " ")} UTC)
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {checked && !checked.readable ? (
        <ErrorBox error={{ code: checked.issue.code, message: `${checked.name} line ${checked.issue.line}: ${checked.issue.message}` }} />
      ) : null}
      {checked?.readable ? (
        <>
          {checked.ignoredColumns.length > 0 ? (
            <p className="notice" data-testid="ignored-columns">
              Ignored column{checked.ignoredColumns.length > 1 ? "s" : ""} (not task fields): {checked.ignoredColumns.map((c) => `"${c}"`).join(", ")}
            </p>
          ) : null}
          <RowsTable checked={checked} outcomes={outcomes} />
          {totals ? (
            <div className="totals" data-testid="totals">
              <p>
                Tasks to post: <strong>{totals.tasks}</strong> (public {totals.public.count}, private {totals.private.count})
                {checked.flagged > 0 ? `; ${checked.flagged} flagged row${checked.flagged > 1 ? "s" : ""} left out` : ""}
              </p>
              <p>
                Total escrow: <strong>{formatUsdc(totals.totalRaw)} USDC</strong> (public {formatUsdc(totals.public.raw)}, private{" "}
                {formatUsdc(totals.private.raw)})
              </p>
              <p>
                Transactions: up to {totals.fundings + 1} (1 approval + {totals.fundings} funding{totals.fundings === 1 ? "" : "s"};{" "}
                {totals.batch ? `up to ${totals.perTransaction} tasks per funding` : "one funding per task"})
              </p>
              {totals.batch ? (
                <p>
                  <label>
                    Tasks per funding{" "}
                    <input
                      type="number"
                      min={1}
                      max={settlement?.batchCreate.maxBatch}
                      value={chunk ?? totals.perTransaction}
                      disabled={running}
                      onChange={(e) => setChunk(Math.max(1, Number(e.target.value) || 1))}
                    />
                  </label>
                </p>
              ) : null}
              {resumes ? <p className="notice">This file was started in this browser: posting finishes its run, paying nothing twice.</p> : null}
              {totals.tasks > 0 && !result ? (
                <button type="button" disabled={running} onClick={() => void post()}>
                  Pay {formatUsdc(totals.totalRaw)} USDC into escrow for {totals.tasks} task{totals.tasks === 1 ? "" : "s"}
                </button>
              ) : null}
            </div>
          ) : null}
        </>
      ) : null}
      {progress ? (
        <div>
          <label>
            Posted {progress.done} of {progress.total} <progress data-testid="progress" value={progress.done} max={Math.max(progress.total, 1)} />
          </label>
        </div>
      ) : null}
      {notes.length > 0 ? (
        <ul className="muted" data-testid="notes">
          {notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      ) : null}
      <ErrorBox error={error} />
      {result ? (
        <p data-testid="run-done">
          {result.complete ? "Every row is done." : "Rows are left: drop the same file again to finish them (nothing is paid twice)."}{" "}
          <a href={URL.createObjectURL(new Blob([result.csv], { type: "text/csv" }))} download={`${dropped?.name ?? "tasks"}.results.csv`}>
            Download the results (CSV)
          </a>
        </p>
      ) : null}
    </Page>
  );
}

function RowsTable({ checked, outcomes }: { checked: Extract<CheckedFile, { readable: true }>; outcomes: Outcome[] | undefined }) {
  const byKey = new Map(outcomes?.map((o) => [o.row.key, o.outcome]));
  return (
    <table className="list" data-testid="rows">
      <thead>
        <tr>
          <th>Line</th>
          <th>Row</th>
          <th>Reward</th>
          <th>Privacy</th>
          <th>Status</th>
        </tr>
      </thead>
      <tbody>
        {checked.lines.map((l) =>
          l.row ? (
            <tr key={l.line} data-line={l.line}>
              <td>{l.line}</td>
              <td>
                {l.row.row.instructions.slice(0, 80)}
                {l.row.row.capabilities.length > 0 ? <span className="muted"> ({l.row.row.capabilities.join(", ")})</span> : null}
              </td>
              <td>{formatUsdc(l.row.row.amount)} USDC</td>
              <td>{l.row.row.privacy}</td>
              <td>
                <OutcomeCell outcome={byKey.get(l.row.key)} />
              </td>
            </tr>
          ) : (
            <tr key={l.line} data-line={l.line} className="flagged">
              <td>{l.line}</td>
              <td>
                <code>{l.text}</code>
              </td>
              <td colSpan={2}></td>
              <td role="status">
                {l.issues.map((i, n) => (
                  <div key={n}>
                    not posted: <code>{i.code}</code> {i.column ? `(${i.column}) ` : ""}
                    {i.message}
                  </div>
                ))}
              </td>
            </tr>
          ),
        )}
      </tbody>
    </table>
  );
}

function OutcomeCell({ outcome }: { outcome: RowOutcome | undefined }) {
  if (!outcome) return <>ready</>;
  return (
    <>
      {outcome.status}
      {outcome.status === RowStatus.posted && outcome.taskHash ? (
        <>
          {" "}
          <a href={`/tasks/${outcome.taskHash}`}>{shortHex(outcome.taskHash)}</a>
        </>
      ) : null}
      {outcome.error ? (
        <div className="muted">
          <code>{outcome.error.code}</code> {outcome.error.message}
        </div>
      ) : null}
    </>
  );
}
