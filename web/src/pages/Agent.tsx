import { api } from "../api";
import { Amount, ErrorBox, Loading, Page, formatTime, useLoad } from "../ui";
import { SettledChart } from "./SettledChart";

/** An agent's card: profile, reputation, badges and stats per capability tag, and its services. */
export default function Agent({ address }: { address: string }) {
  const profile = useLoad(() => api.executor(address), [address]);
  const reputation = useLoad(() => api.reputation(address), [address]);
  const badges = useLoad(() => api.badges(address), [address]);
  const services = useLoad(() => api.services({ agent: address }), [address]);
  const p = profile.data?.profile;
  return (
    <Page title={p?.displayName ?? "Agent"}>
      <ErrorBox error={profile.error} />
      {profile.loading && !p ? <Loading what="the agent" /> : null}
      {p ? (
        <dl className="facts">
          <dt>Address</dt>
          <dd>
            <code>{p.address}</code>
          </dd>
          <dt>Capabilities</dt>
          <dd>{p.capabilities.join(", ") || "none"}</dd>
          <dt>Chains</dt>
          <dd>{(p.supportedChains ?? ["base"]).join(", ")}</dd>
          <dt>Minimum reward</dt>
          <dd>{p.minReward ? <Amount raw={p.minReward} /> : "none"}</dd>
          <dt>Earnings</dt>
          <dd>
            <Amount raw={p.earnings} />
          </dd>
          <dt>Registered</dt>
          <dd>{formatTime(p.registeredAt)}</dd>
        </dl>
      ) : null}
      <h2>Reputation</h2>
      <ErrorBox error={reputation.error} />
      {reputation.data ? (
        <dl className="facts">
          <dt>Reputation</dt>
          <dd>{reputation.data.reputation} / 100</dd>
          <dt>Score (decayed)</dt>
          <dd>{reputation.data.decayedScore.toFixed(1)}</dd>
          <dt>Tasks settled</dt>
          <dd>{reputation.data.offChainTasksCompleted}</dd>
          <dt>Disputes lost</dt>
          <dd>{reputation.data.offChainDisputes}</dd>
        </dl>
      ) : null}
      <h2>Paid work</h2>
      <SettledChart address={address} />
      <h2>Badges and stats per tag</h2>
      <ErrorBox error={badges.error} />
      {badges.data ? (
        <>
          <p>
            {badges.data.badges.length === 0
              ? "No badge earned yet."
              : badges.data.badges.map((b) => (
                  <span key={b.tag} className="badge">
                    {b.tag}
                  </span>
                ))}
          </p>
          {badges.data.stats.length > 0 ? (
            <table className="list">
              <thead>
                <tr>
                  <th scope="col">Tag</th>
                  <th scope="col">Completed</th>
                  <th scope="col">Failed</th>
                </tr>
              </thead>
              <tbody>
                {badges.data.stats.map((s) => (
                  <tr key={s.tag}>
                    <td>{s.tag}</td>
                    <td>{s.completions}</td>
                    <td>{s.failures}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </>
      ) : null}
      <h2>Services</h2>
      <ErrorBox error={services.error} />
      {services.data ? (
        services.data.services.length === 0 ? (
          <p>This agent offers no service.</p>
        ) : (
          <ul>
            {services.data.services.map((s) => (
              <li key={s.id}>
                <strong>{s.name}</strong> <Amount raw={s.price_raw} /> — {s.description}
              </li>
            ))}
          </ul>
        )
      ) : null}
    </Page>
  );
}
