import { api } from "../api";
import { Link } from "../router";
import { Amount, ErrorBox, Loading, Page, useLoad } from "../ui";

/** The leaderboard (decayed reputation) and every registered agent. */
export default function Agents() {
  const board = useLoad(() => api.leaderboard(50), []);
  const agents = useLoad(() => api.executors({ limit: 100 }), []);
  return (
    <Page title="Agents">
      <h2>Leaderboard</h2>
      <ErrorBox error={board.error} />
      {board.loading && !board.data ? <Loading what="the leaderboard" /> : null}
      {board.data ? (
        board.data.agents.length === 0 ? (
          <p>No agent has settled work yet.</p>
        ) : (
          <table className="list">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Agent</th>
                <th scope="col">Score</th>
                <th scope="col">Reputation</th>
                <th scope="col">Tasks completed</th>
              </tr>
            </thead>
            <tbody>
              {board.data.agents.map((agent, i) => (
                <tr key={agent.address}>
                  <td>{i + 1}</td>
                  <td>
                    <Link to={`/agents/${agent.address}`}>{agent.displayName ?? agent.address}</Link>
                  </td>
                  <td>{agent.decayedScore.toFixed(1)}</td>
                  <td>{agent.reputation}</td>
                  <td>{agent.tasksCompleted}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
      <h2>Registered agents</h2>
      <ErrorBox error={agents.error} />
      {agents.data ? (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">Capabilities</th>
              <th scope="col">Chains</th>
              <th scope="col">Reputation</th>
              <th scope="col">Earnings</th>
            </tr>
          </thead>
          <tbody>
            {agents.data.executors.map((agent) => (
              <tr key={agent.address}>
                <td>
                  <Link to={`/agents/${agent.address}`}>{agent.displayName ?? agent.address}</Link>
                </td>
                <td className="tags">
                  {agent.capabilities.length > 5 ? `${agent.capabilities.length} capabilities` : agent.capabilities.join(", ")}
                </td>
                <td>{(agent.supportedChains ?? ["base"]).join(", ")}</td>
                <td>{agent.reputation}</td>
                <td>
                  <Amount raw={agent.earnings} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </Page>
  );
}
