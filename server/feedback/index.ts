import { Type } from "@sinclair/typebox";
import type { App, Context } from "../app";
import { Address, CREDENTIALS, Envelope, errorResponses, ok } from "../http/schemas";
import { loadTask } from "../marketplace/task-context";
import { addressParam } from "../http/params";
import { isUniqueViolation } from "../db";
import { MarketError } from "../../core/errors";
import { EscrowStatus } from "../../core/escrow";

const TaskParams = Type.Object({ taskHash: Type.String({ maxLength: 100 }) });
const Message = Type.Object({ id: Type.Integer(), sender: Address, body: Type.String(), createdAt: Type.Integer() });

/** Reviews of completed tasks (by the poster, once) and messages between a task's poster and its executor. */
export function feedbackRoutes(app: App, { db, chains, auth, now }: Context) {
  app.post(
    "/api/v1/a2a/tasks/:taskHash/review",
    {
      schema: {
        tags: ["feedback"],
        summary: "Review the agent of a completed task (poster only, once)",
        security: CREDENTIALS,
        params: TaskParams,
        body: Type.Object(
          { rating: Type.Integer({ minimum: 1, maximum: 5 }), comment: Type.Optional(Type.String({ maxLength: 2000 })) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Object({ taskHash: Type.String(), agent: Address, rating: Type.Integer() })), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      const task = await loadTask(db, chains, request.params.taskHash);
      if (task.listing.poster !== principal.wallet) throw new MarketError("NOT_POSTER", "Only the poster reviews.");
      const { status, worker } = task.onChain;
      if ((status !== EscrowStatus.Verified && status !== EscrowStatus.Paid) || !worker) throw new MarketError("TASK_NOT_COMPLETED");
      try {
        await db
          .insertInto("reviews")
          .values({
            task_hash: task.listing.task_hash,
            agent_address: worker,
            poster: principal.wallet,
            rating: request.body.rating,
            comment: request.body.comment ?? null,
            created_at: now(),
          })
          .execute();
      } catch (error) {
        if (isUniqueViolation(error)) throw new MarketError("ALREADY_REVIEWED");
        throw error;
      }
      return ok({ taskHash: task.listing.task_hash, agent: worker, rating: request.body.rating });
    },
  );

  app.get(
    "/api/v1/reputation/:address/reviews",
    {
      schema: {
        tags: ["reputation"],
        summary: "Reviews of an agent, newest first",
        params: Type.Object({ address: Type.String({ maxLength: 100 }) }),
        response: {
          200: Envelope(
            Type.Object({
              reviews: Type.Array(
                Type.Object({ taskHash: Type.String(), poster: Address, rating: Type.Integer(), comment: Type.Union([Type.String(), Type.Null()]), createdAt: Type.Integer() }),
              ),
              averageRating: Type.Union([Type.Number(), Type.Null()]),
            }),
          ),
          ...errorResponses(),
        },
      },
    },
    async (request) => {
      const rows = await db
        .selectFrom("reviews")
        .selectAll()
        .where("agent_address", "=", addressParam(request.params.address))
        .orderBy("created_at", "desc")
        .limit(200)
        .execute();
      const reviews = rows.map((r) => ({ taskHash: r.task_hash, poster: r.poster, rating: r.rating, comment: r.comment, createdAt: r.created_at }));
      const averageRating = reviews.length === 0 ? null : reviews.reduce((sum, r) => sum + r.rating, 0) / reviews.length;
      return ok({ reviews, averageRating });
    },
  );

  /** The poster and the assigned executor only; no executor yet means no conversation yet. */
  async function party(request: { headers: Record<string, string | string[] | undefined> }, taskHash: string) {
    const principal = await auth.required(request);
    const task = await loadTask(db, chains, taskHash);
    const isPoster = principal.wallet === task.listing.poster;
    if (!isPoster && principal.wallet !== task.onChain.worker) throw new MarketError("NOT_TASK_PARTY", "Only the poster and the assigned executor exchange task messages.");
    if (!task.onChain.worker) throw new MarketError("NO_AGENT_ASSIGNED");
    return { principal, task };
  }

  app.post(
    "/api/v1/a2a/tasks/:taskHash/messages",
    {
      schema: {
        tags: ["feedback"],
        summary: "Send a message about a task (poster or assigned executor)",
        security: CREDENTIALS,
        params: TaskParams,
        body: Type.Object({ body: Type.String({ minLength: 1, maxLength: 4000 }) }, { additionalProperties: false }),
        response: { 200: Envelope(Message), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { principal, task } = await party(request, request.params.taskHash);
      const at = now();
      const row = await db
        .insertInto("task_messages")
        .values({ task_hash: task.listing.task_hash, sender: principal.wallet, body: request.body.body, created_at: at })
        .returning("id")
        .executeTakeFirstOrThrow();
      return ok({ id: row.id, sender: principal.wallet, body: request.body.body, createdAt: at });
    },
  );

  app.get(
    "/api/v1/a2a/tasks/:taskHash/messages",
    {
      schema: {
        tags: ["feedback"],
        summary: "A task's messages, oldest first (poster or assigned executor)",
        security: CREDENTIALS,
        params: TaskParams,
        response: { 200: Envelope(Type.Object({ messages: Type.Array(Message) })), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { task } = await party(request, request.params.taskHash);
      const rows = await db.selectFrom("task_messages").selectAll().where("task_hash", "=", task.listing.task_hash).orderBy("id").limit(1000).execute();
      return ok({ messages: rows.map((m) => ({ id: m.id, sender: m.sender, body: m.body, createdAt: m.created_at })) });
    },
  );
}
