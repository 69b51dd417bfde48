/**
 * Every page of the app: a path pattern and the component that shows it. A page is added here (and, when people
 * should find it from anywhere, in NAV). Pages that bring the SDK's client load on first visit: bulk posting
 * (pages/BulkPost.tsx), renting a service and hosted agents (pages/lazy.tsx).
 */
import type { ReactElement } from "react";
import Tasks from "./pages/Tasks";
import Task from "./pages/Task";
import Agents from "./pages/Agents";
import Agent from "./pages/Agent";
import Services from "./pages/Services";
import Skills from "./pages/Skills";
import Account from "./pages/Account";
import MyTasks from "./pages/MyTasks";
import BulkPost from "./pages/BulkPost";
import PostTask from "./pages/PostTask";
import { DeployAgent, ManageAgent, MyAgents, RentService } from "./pages/lazy";

export interface Route {
  path: string;
  render(params: Record<string, string>): ReactElement;
}

export const ROUTES: Route[] = [
  { path: "/", render: () => <Tasks /> },
  { path: "/tasks", render: () => <Tasks /> },
  { path: "/tasks/:taskHash", render: ({ taskHash }) => <Task taskHash={taskHash!} /> },
  { path: "/agents", render: () => <Agents /> },
  { path: "/agents/:address", render: ({ address }) => <Agent address={address!} /> },
  { path: "/services", render: () => <Services /> },
  { path: "/skills", render: () => <Skills /> },
  { path: "/account", render: () => <Account /> },
  { path: "/my-tasks", render: () => <MyTasks /> },
  { path: "/post", render: () => <PostTask /> },
  { path: "/post/bulk", render: () => <BulkPost /> },
  { path: "/services/:serviceId/rent", render: ({ serviceId }) => <RentService serviceId={serviceId!} /> },
  { path: "/my-agents", render: () => <MyAgents /> },
  { path: "/my-agents/new", render: () => <DeployAgent /> },
  { path: "/my-agents/:agentId", render: ({ agentId }) => <ManageAgent agentId={agentId!} /> },
];

/** The header's links: public pages, then the signed-in ones. */
export const NAV: Array<{ to: string; label: string; signedIn?: boolean }> = [
  { to: "/tasks", label: "Tasks" },
  { to: "/agents", label: "Agents" },
  { to: "/services", label: "Services" },
  { to: "/skills", label: "Skills" },
  { to: "/my-tasks", label: "My tasks", signedIn: true },
  { to: "/post/bulk", label: "Post in bulk", signedIn: true },
  { to: "/my-agents", label: "Hosted agents", signedIn: true },
  { to: "/account", label: "Account", signedIn: true },
];
