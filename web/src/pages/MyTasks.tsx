import { api } from "../api";
import { Link } from "../router";
import { useSession } from "../session";
import { useTaskEvents } from "../events";
import { Amount, ErrorBox, Loading, Page, Status, formatTime, shortHex, useLoad } from "../ui";
import { SignInPrompt } from "./SignInPrompt";

/** The signed-in poster's tasks, newest first. */
export default function MyTasks() {
  const { session } = useSession();
  if (!session) return <SignInPrompt title="My tasks" />;
  return <Posted token={session.token} />;
}

function Posted({ token }: { token: string }) {
  const tasks = useLoad(() => api.posted(token), [token]);
  // Live: an event of any listed task reloads the list (statuses change as agents take, deliver and get paid).
  useTaskEvents(token, tasks.data?.tasks.map((t) => t.meta.taskHash) ?? [], tasks.reload);
  return (
    <Page
      title="My tasks"
      actions={
        <Link to="/post" className="button-link">
          Post a task
        </Link>
      }
    >
      <ErrorBox error={tasks.error} />
      {tasks.loading && !tasks.data ? <Loading what="your tasks" /> : null}
      {tasks.data ? (
        tasks.data.tasks.length === 0 ? (
          <p>You have posted no task yet.</p>
        ) : (
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Reward</th>
                <th scope="col">Status</th>
                <th scope="col">Listed</th>
              </tr>
            </thead>
            <tbody>
              {tasks.data.tasks.map(({ meta, state }) => (
                <tr key={meta.taskHash}>
                  <td>
                    <Link to={`/tasks/${meta.taskHash}`}>{meta.routingSummary || meta.publicBrief?.slice(0, 80) || shortHex(meta.taskHash)}</Link>
                  </td>
                  <td>
                    <Amount raw={meta.reward.amount} />
                  </td>
                  <td>
                    <Status status={state.status} />
                  </td>
                  <td>{formatTime(meta.listedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
    </Page>
  );
}
