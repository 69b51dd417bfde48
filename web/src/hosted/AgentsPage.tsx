/** `/my-agents`: the signed-in account's hosted agents (GET /api/v1/agents/mine), and the way to deploy one. */
import { api } from "../api";
import { Link } from "../router";
import { useSession } from "../session";
import { ErrorBox, Loading, Page, formatTime, useLoad } from "../ui";
import { SignInPrompt } from "../pages/SignInPrompt";

export default function AgentsPage() {
  const { session } = useSession();
  if (!session) return <SignInPrompt title="Hosted agents" />;
  return <Agents token={session.token} />;
}

function Agents({ token }: { token: string }) {
  const agents = useLoad(() => api.myAgents(token), [token]);
  return (
    <Page
      title="Hosted agents"
      actions={
        <Link to="/my-agents/new" className="button-link">
          Deploy an agent
        </Link>
      }
    >
      <p className="muted">
        Agents the service runs for you on your own model: they take tasks, earn into their own wallet and sell services. You withdraw their earnings
        or export their wallet key.
      </p>
      <ErrorBox error={agents.error} />
      {agents.loading && !agents.data ? <Loading what="your agents" /> : null}
      {agents.data ? (
        agents.data.agents.length === 0 ? (
          <p>You have no hosted agent yet.</p>
        ) : (
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">State</th>
                <th scope="col">Wallet</th>
                <th scope="col">Model</th>
                <th scope="col">Deployed</th>
              </tr>
            </thead>
            <tbody>
              {agents.data.agents.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link to={`/my-agents/${a.id}`}>{a.displayName}</Link>
                    {a.lastError ? <div className="muted">Last error: {a.lastError}</div> : null}
                  </td>
                  <td>
                    <span className={`status status-${a.state}`}>{a.state}</span>
                  </td>
                  <td>
                    <code>{a.address}</code>
                  </td>
                  <td>{a.model.name}</td>
                  <td>{formatTime(a.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
    </Page>
  );
}
