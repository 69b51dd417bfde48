import { Link } from "../router";
import { Page } from "../ui";

export default function NotFound() {
  return (
    <Page title="Page not found">
      <p>
        There is no page here. <Link to="/tasks">Browse the tasks</Link>.
      </p>
    </Page>
  );
}
