import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import type { ChainRegistry } from "../chains";
import { errorResponses, ok, CREDENTIALS, OPTIONAL_CREDENTIALS } from "../http/schemas";
import { taskHashParam } from "../http/params";
import { capabilityQuery } from "../agents";
import type { Funding } from "./funding";
import type { Listings } from "./listing";
import type { TaskQueries } from "./queries";
import {
  BrowseAnswer,
  BrowseQuery,
  BuildBatchBody,
  BuildTaskBody,
  BuiltBatch,
  BuiltTask,
  Envelope,
  ExploreAnswer,
  ExploreQuery,
  IndexAnswer,
  IndexBody,
  PostedAnswer,
  PostedQuery,
  TaskHashParams,
  TaskView,
  asTaskHash,
} from "@market/core/api";
import { MarketError } from "@market/core/errors";
import type { TaskStatus } from "@market/core/status";

/**
 * Tasks: posting (checking a task's properties, building its funding transaction, listing it once funded) and the
 * read model every other part reads tasks through (`queries`, `context`).
 */
export { createTaskQueries, toTaskView, type TaskQueries, type TaskRow } from "./queries";
export { createFunding, type Funding } from "./funding";
export { createListings, type Listings } from "./listing";
export { assignedTaskRoutes, ASSIGNED_TASKS_PREFIX } from "./assigned";
export { escrowPaused, loadTask, requireLive, statusOf, waitForIndexer, type Assignment, type Delivery, type TaskContext } from "./context";
export { listedFields, listingChain, listingMeta, listingRow, type ListedFields } from "./listing-codec";
export { normalizeWrappedKeys, requireValidCriteria, type TermsDeps } from "./terms";

export interface TaskRouteDeps {
  auth: Authenticate;
  chains: ChainRegistry;
  queries: TaskQueries;
  funding: Funding;
  listings: Listings;
}

/** Posting, listing, browsing and reading tasks, under API_PREFIX: posting and the poster's list authenticated by their hook. */
export const taskRoutes: FastifyPluginAsyncTypebox<TaskRouteDeps> = async (app, { auth, chains, queries, funding, listings }) => {
  const requireAuth = authenticated(auth);
  /** The chain a new task is posted on: the default postable chain unless the body names another postable one. */
  const postingChain = (name: string | undefined) => {
    const chain = name === undefined ? chains.posting() : chains.require(name);
    if (!chain.config.postable) {
      const postable = chains
        .list()
        .filter((c) => c.config.postable)
        .map((c) => c.name);
      throw new MarketError("CHAIN_NOT_POSTABLE", `New tasks are posted on ${postable.join(", ") || "no chain"} here, not ${chain.name}.`);
    }
    return chain;
  };

  app.post(
    "/tasks",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["posting"],
        summary: "Check a task's properties and build its funding transaction for the key's wallet",
        description:
          "Answers `unsignedTx` (createTask on the escrow, with `to`) and `approveTx` (approval of the escrow for the " +
          "amount, or null when the allowance covers it), both to sign and send from the API key's wallet. Nothing is stored.",
        security: CREDENTIALS,
        body: BuildTaskBody,
        response: { 200: Envelope(BuiltTask), ...errorResponses(401, 409, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok(await funding.buildOne(request.body, principal.wallet, postingChain(request.body.chain)));
    },
  );

  app.post(
    "/tasks/batch",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["posting"],
        summary: "Build one createTasks transaction for up to 20 tasks (escrows with batch creation)",
        description: "Any refused task refuses the batch with `INVALID_ROWS` and one detail per refused task (`index`, `code`).",
        security: CREDENTIALS,
        body: BuildBatchBody,
        response: { 200: Envelope(BuiltBatch), ...errorResponses(401, 409, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const first = request.body.tasks[0];
      const chain = postingChain(first?.chain);
      if (request.body.tasks.some((t) => (t.chain ?? chain.name) !== chain.name)) {
        throw new MarketError("VALIDATION_FAILED", "Every task of a batch is on the same chain.", {
          details: [{ field: "body.tasks.chain", message: "differs between tasks" }],
        });
      }
      return ok(await funding.buildBatch(request.body.tasks, principal.wallet, chain));
    },
  );

  app.post(
    "/a2a/tasks/index",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["posting"],
        summary: "List a funded task (or every task of a batch receipt)",
        description:
          "The funding receipt must be sent by the API key's wallet and carry the task's `TaskCreated` from the escrow. " +
          "The first listing fixes the task's properties; listing again with the same properties answers `already_listed`. " +
          "Batch form `{ txHash, tasks: [...] }`: each item is listed on its own; when any fails the answer is " +
          "`INDEX_FAILED` with one entry per item in `details` (`status` listed/already_listed/failed, item `code` such as " +
          "`NOT_IN_RECEIPT` or `DUPLICATE_TASK_HASH`).",
        security: CREDENTIALS,
        body: IndexBody,
        response: { 200: Envelope(IndexAnswer), ...errorResponses(401, 403, 404, 409, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const body = request.body;
      if ("tasks" in body) {
        const chain = postingChain(body.tasks[0]?.chain);
        const results = await listings.listBatch(chain, principal.wallet, body.txHash, body.tasks);
        if (results.some((r) => r.status === "failed")) {
          throw new MarketError(
            "LISTING_FAILED",
            `${results.filter((r) => r.status === "failed").length} of ${results.length} tasks were not listed.`,
            {
              details: results,
            },
          );
        }
        return ok({
          results: results.map(({ taskHash, status }) => ({ taskHash: asTaskHash(taskHash), status: status as "listed" | "already_listed" })),
        });
      }
      return ok(await listings.listOne(postingChain(body.chain), principal.wallet, body));
    },
  );

  const browsePages = new WeakMap<object, string>();
  app.get(
    "/a2a/tasks",
    {
      schema: {
        tags: ["marketplace"],
        summary: "Browse open tasks the caller can take",
        description:
          "A task is listed only when every capability it requires is in `capabilities` (tasks requiring none always are). " +
          "At most 100 per call, newest first. Pinned tasks show only to their agent. `total` counts every matching open " +
          "task; when the page is full it is the latest count, recounted once it is 2 seconds old, or ten times as long as that count took, " +
          "if a task was listed, changed or expired since (while the recount runs, the previous one is answered).",
        querystring: BrowseQuery,
        security: OPTIONAL_CREDENTIALS,
        response: { 200: Envelope(BrowseAnswer), ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const principal = await auth.optional(request);
      const page = await queries.browse({ capabilities: capabilityQuery(request.query.capabilities), caller: principal?.wallet });
      // A page served from the browse cache is the same object: serialize it once (with this route's schema).
      let body = browsePages.get(page);
      if (body === undefined) browsePages.set(page, (body = reply.serialize(ok(page)) as string));
      // Already JSON: Fastify sends a string with a JSON content type as it is.
      return reply.type("application/json; charset=utf-8").send(body as never);
    },
  );

  app.get(
    "/tasks",
    {
      schema: {
        tags: ["marketplace"],
        summary: "Every listed task, newest first, filtered and paged by cursor (the web app's task browser)",
        description:
          "Public metadata and state of every listed task but pinned ones (rentals and tasks for one agent), whatever its status, " +
          "newest first, 50 per page by default (at most 100); `nextCursor` is the next page's `cursor`, null on the last page. " +
          "Filters: `status`, `chain`, `capability` (the task requires it), `worker` (its escrow's worker, kept once paid), " +
          "`minReward` and `maxReward` (raw units).",
        querystring: ExploreQuery,
        response: { 200: Envelope(ExploreAnswer), ...errorResponses() },
      },
    },
    async (request) => {
      const q = request.query;
      const limit = Math.max(1, Math.min(Number(q.limit ?? 50), 100));
      const cursor = q.cursor?.split("_");
      return ok(
        await queries.explore({
          ...(q.status ? { status: q.status as TaskStatus } : {}),
          ...(q.chain ? { chain: q.chain } : {}),
          ...(q.capability ? { capability: q.capability } : {}),
          ...(q.worker ? { worker: q.worker } : {}),
          ...(q.minReward !== undefined ? { minReward: q.minReward } : {}),
          ...(q.maxReward !== undefined ? { maxReward: q.maxReward } : {}),
          limit,
          ...(cursor ? { before: { listedAt: Number(cursor[0]), taskHash: cursor[1]! } } : {}),
        }),
      );
    },
  );

  app.get(
    "/a2a/tasks/posted",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["posting"],
        summary: "The caller's posted tasks, newest first",
        security: CREDENTIALS,
        querystring: PostedQuery,
        response: { 200: Envelope(PostedAnswer), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const limit = Math.max(1, Math.min(Number(request.query.limit ?? 100), 1000));
      const cursor = request.query.cursor?.split("_");
      const before = cursor ? { listedAt: Number(cursor[0]), taskHash: cursor[1]! } : undefined;
      return ok(await queries.posted(principal.wallet, { limit, before }));
    },
  );

  app.get(
    "/tasks/:taskHash",
    {
      schema: {
        tags: ["marketplace"],
        summary: "One listed task: its public metadata and state",
        description: "`state.resultData.output` (the latest delivered result) shows only to the task's poster, worker and designated verifier.",
        security: OPTIONAL_CREDENTIALS,
        params: TaskHashParams,
        response: { 200: Envelope(TaskView), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const { taskHash } = request.params;
      const principal = await auth.optional(request);
      const task = await queries.view(taskHashParam(taskHash), principal?.wallet);
      if (!task) throw new MarketError("TASK_NOT_FOUND");
      return ok(task);
    },
  );
};
