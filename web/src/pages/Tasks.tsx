import { useState } from "react";
import { api } from "../api";
import { Link, navigate, useLocation } from "../router";
import { Amount, ErrorBox, Loading, Page, Status, formatTime, shortHex, useLoad } from "../ui";
import { CAPABILITIES, CHAINS, STATUSES } from "../constants";
import { parseUsdcDecimal } from "@market/core/money";
import type { ExploreQuery } from "@market/core/api";

const FILTERS = ["status", "chain", "capability", "min", "max"] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

/** A reward bound typed in USDC, as raw units; undefined when empty or not an amount (the form says so). */
function rawOf(text: string): string | undefined {
  if (text.trim() === "") return undefined;
  const parsed = parseUsdcDecimal(text.trim());
  return parsed.ok ? parsed.value.toString() : undefined;
}

/**
 * Every listed task, newest first, filtered by status, chain, capability and reward, 50 a page by cursor (GET
 * /api/v1/tasks): the filters and the page are in the URL, so a link or a reload shows the same page.
 */
export default function Tasks() {
  const { search } = useLocation();
  const current = Object.fromEntries(FILTERS.map((f) => [f, search.get(f) ?? ""])) as Filters;
  const cursor = search.get("cursor") ?? undefined;
  const pageNumber = Number(search.get("page") ?? "1");
  const filter: ExploreQuery = {
    ...(current.status ? { status: current.status } : {}),
    ...(current.chain ? { chain: current.chain } : {}),
    ...(current.capability ? { capability: current.capability } : {}),
    ...(rawOf(current.min) ? { minReward: rawOf(current.min) } : {}),
    ...(rawOf(current.max) ? { maxReward: rawOf(current.max) } : {}),
    ...(cursor ? { cursor } : {}),
  };
  const key = JSON.stringify(filter);
  const tasks = useLoad(() => api.explore(filter), [key]);
  const [draft, setDraft] = useState<Filters>(current);
  const badAmount = (["min", "max"] as const).find((f) => draft[f].trim() !== "" && rawOf(draft[f]) === undefined);

  const go = (filters: Filters, page?: { cursor: string; number: number }) => {
    const params = new URLSearchParams();
    for (const f of FILTERS) if (filters[f].trim()) params.set(f, filters[f].trim());
    if (page) {
      params.set("cursor", page.cursor);
      params.set("page", String(page.number));
    }
    const text = params.toString();
    navigate(text ? `/tasks?${text}` : "/tasks");
  };

  const select = (name: "status" | "chain" | "capability", label: string, options: readonly string[]) => (
    <label>
      {label}
      <select value={draft[name]} onChange={(event) => setDraft({ ...draft, [name]: event.target.value })}>
        <option value="">any</option>
        {options.map((option) => (
          <option key={option} value={option}>
            {option.replace(/_/g, " ")}
          </option>
        ))}
      </select>
    </label>
  );

  return (
    <Page title="Tasks">
      <form
        className="filters"
        onSubmit={(event) => {
          event.preventDefault();
          if (!badAmount) go(draft);
        }}
      >
        {select("status", "Status", STATUSES)}
        {select("chain", "Chain", CHAINS)}
        {select("capability", "Capability", CAPABILITIES)}
        <label>
          Reward from (USDC)
          <input value={draft.min} onChange={(event) => setDraft({ ...draft, min: event.target.value })} inputMode="decimal" size={8} />
        </label>
        <label>
          to
          <input value={draft.max} onChange={(event) => setDraft({ ...draft, max: event.target.value })} inputMode="decimal" size={8} />
        </label>
        <button type="submit">Filter</button>
        {badAmount ? (
          <p className="error" role="alert">
            The reward {badAmount === "min" ? "from" : "to"} is not an amount of USDC (at most 6 decimals).
          </p>
        ) : null}
      </form>
      <ErrorBox error={tasks.error} />
      {tasks.loading && !tasks.data ? <Loading what="tasks" /> : null}
      {tasks.data ? (
        <>
          <table className="list">
            <caption className="visually-hidden">Tasks, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Reward</th>
                <th scope="col">Capabilities</th>
                <th scope="col">Chain</th>
                <th scope="col">Status</th>
                <th scope="col">Listed</th>
              </tr>
            </thead>
            <tbody>
              {tasks.data.tasks.map(({ meta, state }) => (
                <tr key={meta.taskHash}>
                  <td>
                    <Link to={`/tasks/${meta.taskHash}`}>
                      {meta.routingSummary || meta.publicBrief?.slice(0, 80) || `Private task ${shortHex(meta.taskHash)}`}
                    </Link>
                  </td>
                  <td>
                    <Amount raw={meta.reward.amount} decimals={meta.reward.unit.decimals} symbol={meta.reward.unit.symbol} />
                  </td>
                  <td>{meta.requiredCapabilities.join(", ") || "any"}</td>
                  <td>{meta.chain}</td>
                  <td>
                    <Status status={state.status} />
                  </td>
                  <td>{formatTime(meta.listedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {tasks.data.tasks.length === 0 ? <p>No task matches.</p> : null}
          <nav className="pager" aria-label="Pages">
            {cursor ? (
              <button type="button" className="secondary" onClick={() => go(current)}>
                First page
              </button>
            ) : null}
            <span>Page {pageNumber}</span>
            {tasks.data.nextCursor ? (
              <button type="button" className="secondary" onClick={() => go(current, { cursor: tasks.data!.nextCursor!, number: pageNumber + 1 })}>
                Next page
              </button>
            ) : null}
          </nav>
        </>
      ) : null}
    </Page>
  );
}
