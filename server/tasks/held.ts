import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Authenticate } from "../auth";
import type { TaskQueries } from "./queries";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import { Envelope, HeldTasksAnswer } from "../../core/api";

/**
 * The tasks a worker holds and has not ended, so a restarted worker (a WorkerRuntime with `resumeHeld`, a hosted
 * agent) continues them.
 */
export const heldTaskRoutes: FastifyPluginAsyncTypebox<{ auth: Authenticate; queries: Pick<TaskQueries, "held"> }> = async (
  app,
  { auth, queries },
) => {
  app.get(
    "/api/v1/a2a/tasks/held",
    {
      schema: {
        tags: ["marketplace"],
        summary: "Tasks the caller works on that have not ended",
        description: "Assigned, delivered (submitted or awaiting a verdict), a failed round, in dispute or escalated; at most 200, oldest first.",
        security: CREDENTIALS,
        response: { 200: Envelope(HeldTasksAnswer), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      return ok({ tasks: await queries.held(principal.wallet) });
    },
  );
};
