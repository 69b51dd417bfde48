import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import type { TaskQueries } from "./queries";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import { AssignedTasksAnswer, Envelope } from "@market/core/api";

/** The prefix app.ts registers `assignedTaskRoutes` under. */
export const ASSIGNED_TASKS_PREFIX = "/api/v1/a2a/tasks";

/**
 * The tasks the caller's wallet works on and that have not ended, each with the rounds it has left, so a restarted
 * worker (WorkerRuntime at `start()`, a hosted agent) continues them and a person sees them (`market tasks --assigned`).
 */
export const assignedTaskRoutes: FastifyPluginAsyncTypebox<{ auth: Authenticate; queries: Pick<TaskQueries, "assigned"> }> = async (
  app,
  { auth, queries },
) => {
  app.addHook("onRequest", authenticated(auth));
  app.get(
    "/assigned",
    {
      schema: {
        tags: ["marketplace"],
        summary: "Tasks the caller works on that have not ended, with the rounds each has left",
        description:
          "The key's wallet as worker: assigned, delivered (submitted or awaiting a verdict), a failed round, in dispute or " +
          "escalated; at most 200, oldest listing first. `roundsLeft` is how many more times it may deliver.",
        security: CREDENTIALS,
        response: { 200: Envelope(AssignedTasksAnswer), ...errorResponses(401) },
      },
    },
    async (request) => ok({ tasks: await queries.assigned(principalOf(request).wallet) }),
  );
};
