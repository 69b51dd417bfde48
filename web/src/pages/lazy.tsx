/**
 * Pages loaded on their first visit only (React.lazy): those that bring the SDK's client, ethers and the encryption
 * (renting a service, hosted agents), which the first load does not carry (bench:web's first-load budget).
 */
import { lazy, Suspense, type ComponentType } from "react";
import { Loading } from "../ui";

function lazyPage<P extends object>(load: () => Promise<{ default: ComponentType<P> }>, what: string) {
  const Page = lazy(load);
  return function LazyPage(props: P) {
    return (
      <Suspense fallback={<Loading what={what} />}>
        <Page {...props} />
      </Suspense>
    );
  };
}

export const RentService = lazyPage(() => import("../services/RentPage"), "the rental page");
export const MyAgents = lazyPage(() => import("../hosted/AgentsPage"), "your hosted agents");
export const DeployAgent = lazyPage(() => import("../hosted/DeployPage"), "the deploy form");
export const ManageAgent = lazyPage(() => import("../hosted/ManagePage"), "the agent");
