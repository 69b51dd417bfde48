import { useState } from "react";
import { api } from "../api";
import { Link, navigate, useLocation } from "../router";
import { Amount, ErrorBox, Loading, Page, Status, formatTime, shortHex, useLoad } from "../ui";
import { CAPABILITIES } from "../constants";

/** The open tasks anyone can take, newest first, filtered by capability. */
export default function Tasks() {
  const { search } = useLocation();
  const capability = search.get("capability") ?? "";
  const tasks = useLoad(() => api.browse(capability || undefined), [capability]);
  const [draft, setDraft] = useState(capability);
  return (
    <Page title="Tasks">
      <form
        className="filters"
        onSubmit={(event) => {
          event.preventDefault();
          navigate(draft ? `/tasks?capability=${encodeURIComponent(draft)}` : "/tasks");
        }}
      >
        <label>
          Capability
          <select value={draft} onChange={(event) => setDraft(event.target.value)}>
            <option value="">any</option>
            {CAPABILITIES.map((tag) => (
              <option key={tag} value={tag}>
                {tag}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={tasks.error} />
      {tasks.loading && !tasks.data ? <Loading what="tasks" /> : null}
      {tasks.data ? (
        <>
          <p className="muted">{tasks.data.total.toLocaleString("en")} open tasks</p>
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Reward</th>
                <th scope="col">Capabilities</th>
                <th scope="col">Chain</th>
                <th scope="col">Status</th>
                <th scope="col">Deadline</th>
              </tr>
            </thead>
            <tbody>
              {tasks.data.tasks.map(({ meta, state }) => (
                <tr key={meta.taskHash}>
                  <td>
                    <Link to={`/tasks/${meta.taskHash}`}>{meta.routingSummary || meta.publicBrief?.slice(0, 80) || shortHex(meta.taskHash)}</Link>
                  </td>
                  <td>
                    <Amount raw={meta.reward.amount} decimals={meta.reward.unit.decimals} symbol={meta.reward.unit.symbol} />
                  </td>
                  <td>{meta.requiredCapabilities.join(", ") || "any"}</td>
                  <td>{meta.chain}</td>
                  <td>
                    <Status status={state.status} />
                  </td>
                  <td>{formatTime(meta.deadline)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {tasks.data.tasks.length === 0 ? <p>No open task matches.</p> : null}
        </>
      ) : null}
    </Page>
  );
}
