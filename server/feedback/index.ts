import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import type { ChainRegistry } from "../chains";
import type { Clock } from "../http/types";
import type { FastifyRequest } from "fastify";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import { loadTask } from "../tasks/context";
import { addressParam } from "../http/params";
import { isUniqueViolation, type Db } from "../db";
import {
  AddressParams,
  Envelope,
  ReviewBody,
  Reviewed,
  Reviews,
  TaskHashParams,
  TaskMessage,
  TaskMessageBody,
  TaskMessages,
  asAddress,
  asTaskHash,
} from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { EscrowStatus } from "@market/core/escrow";

export interface FeedbackDeps {
  auth: Authenticate;
  db: Db;
  chains: ChainRegistry;
  now: Clock;
}

/**
 * Reviews of completed tasks (by the poster, once) and messages between a task's poster and its executor, under
 * API_PREFIX; the reviews of an agent are public, every other route authenticated by its hook.
 */
export const feedbackRoutes: FastifyPluginAsyncTypebox<FeedbackDeps> = async (app, { db, chains, auth, now }) => {
  const requireAuth = authenticated(auth);
  app.post(
    "/a2a/tasks/:taskHash/review",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["feedback"],
        summary: "Review the agent of a completed task (poster only, once)",
        security: CREDENTIALS,
        params: TaskHashParams,
        body: ReviewBody,
        response: { 200: Envelope(Reviewed), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
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
      return ok({ taskHash: asTaskHash(task.listing.task_hash), agent: asAddress(worker), rating: request.body.rating });
    },
  );

  app.get(
    "/reputation/:address/reviews",
    {
      schema: {
        tags: ["reputation"],
        summary: "Reviews of an agent, newest first",
        params: AddressParams,
        response: { 200: Envelope(Reviews), ...errorResponses() },
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
      const reviews = rows.map((r) => ({
        taskHash: asTaskHash(r.task_hash),
        poster: asAddress(r.poster),
        rating: r.rating,
        comment: r.comment,
        createdAt: r.created_at,
      }));
      const averageRating = reviews.length === 0 ? null : reviews.reduce((sum, r) => sum + r.rating, 0) / reviews.length;
      return ok({ reviews, averageRating });
    },
  );

  /** The poster and the assigned executor only; no executor yet means no conversation yet. */
  async function party(request: FastifyRequest, taskHash: string) {
    const principal = principalOf(request);
    const task = await loadTask(db, chains, taskHash);
    const isPoster = principal.wallet === task.listing.poster;
    if (!isPoster && principal.wallet !== task.onChain.worker)
      throw new MarketError("NOT_TASK_PARTY", "Only the poster and the assigned executor exchange task messages.");
    if (!task.onChain.worker) throw new MarketError("NO_AGENT_ASSIGNED");
    return { principal, task };
  }

  app.post(
    "/a2a/tasks/:taskHash/messages",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["feedback"],
        summary: "Send a message about a task (poster or assigned executor)",
        security: CREDENTIALS,
        params: TaskHashParams,
        body: TaskMessageBody,
        response: { 200: Envelope(TaskMessage), ...errorResponses(401, 403, 404, 409) },
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
      return ok({ id: row.id, sender: asAddress(principal.wallet), body: request.body.body, createdAt: at });
    },
  );

  app.get(
    "/a2a/tasks/:taskHash/messages",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["feedback"],
        summary: "A task's messages, oldest first (poster or assigned executor)",
        security: CREDENTIALS,
        params: TaskHashParams,
        response: { 200: Envelope(TaskMessages), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { task } = await party(request, request.params.taskHash);
      const rows = await db
        .selectFrom("task_messages")
        .selectAll()
        .where("task_hash", "=", task.listing.task_hash)
        .orderBy("id")
        .limit(1000)
        .execute();
      return ok({ messages: rows.map((m) => ({ id: m.id, sender: asAddress(m.sender), body: m.body, createdAt: m.created_at })) });
    },
  );
};
