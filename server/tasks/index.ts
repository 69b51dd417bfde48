import { Type } from "@sinclair/typebox";
import type { App, Context } from "../app";
import { Address, Bytes32, Envelope, errorResponses, ok, CREDENTIALS, OPTIONAL_CREDENTIALS } from "../http/schemas";
import { capabilityQuery } from "../agents";
import { createFunding } from "./funding";
import { createListings } from "./listing";
import { createTaskQueries } from "./queries";
import { BuildTaskBody, IndexBatchBody, IndexTaskBody, TaskView, UnsignedTx } from "./schemas";
import { MarketError } from "../../core/errors";
import { taskHashParam } from "../http/params";

export { createTaskQueries, toTaskView, type TaskQueries } from "./queries";


const FundingPlan = Type.Object({
  chain: Type.String(),
  chainId: Type.Integer(),
  escrowAddress: Address,
  token: Address,
  from: Address,
  total: Type.String(),
  unsignedTx: UnsignedTx,
  approveTx: Type.Union([UnsignedTx, Type.Null()]),
  transactions: Type.Array(UnsignedTx),
});

const ListingOutcome = Type.Object({
  taskHash: Bytes32,
  status: Type.Union([Type.Literal("listed"), Type.Literal("already_listed")]),
});

export function taskRoutes(app: App, { db, auth, chains, blobs, now, agents, offers, custody }: Context) {
  const deps = { blobs, agents, custody };
  const funding = createFunding({ db, deps });
  const listings = createListings({ db, deps, now, onListed: (listing, deadline) => offers.open(listing, deadline) });
  const queries = createTaskQueries({ db, now });

  /** The chain a new task is posted on: `arc` unless the body names another (refused: not postable). */
  const postingChain = (name: string | undefined) => {
    const chain = name === undefined ? chains.posting() : chains.require(name);
    if (!chain.config.postable) throw new MarketError("CHAIN_NOT_POSTABLE", `New tasks are posted on arc, not ${chain.name}.`);
    return chain;
  };

  app.post(
    "/api/v1/tasks",
    {
      schema: {
        tags: ["posting"],
        summary: "Check a task's properties and build its funding transaction for the key's wallet",
        description:
          "Answers `unsignedTx` (createTask on the escrow, with `to`) and `approveTx` (approval of the escrow for the " +
          "amount, or null when the allowance covers it), both to sign and send from the API key's wallet. Nothing is stored.",
        security: CREDENTIALS,
        body: BuildTaskBody,
        response: { 200: Envelope(Type.Intersect([Type.Object({ taskHash: Bytes32 }), FundingPlan])), ...errorResponses(401, 409, 503) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      return ok(await funding.buildOne(request.body, principal.wallet, postingChain(request.body.chain)));
    },
  );

  app.post(
    "/api/v1/tasks/batch",
    {
      schema: {
        tags: ["posting"],
        summary: "Build one createTasks transaction for up to 20 tasks (escrows with batch creation)",
        description: "Any refused task refuses the batch with `INVALID_ROWS` and one detail per refused task (`index`, `code`).",
        security: CREDENTIALS,
        body: Type.Object({ tasks: Type.Array(BuildTaskBody, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false }),
        response: {
          200: Envelope(Type.Intersect([Type.Object({ taskHashes: Type.Array(Bytes32) }), FundingPlan])),
          ...errorResponses(401, 409, 503),
        },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
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
    "/api/v1/a2a/tasks/index",
    {
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
        body: Type.Union([IndexTaskBody, IndexBatchBody]),
        response: {
          200: Envelope(Type.Union([ListingOutcome, Type.Object({ results: Type.Array(ListingOutcome) })])),
          ...errorResponses(401, 403, 404, 409, 503),
        },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      const body = request.body;
      if ("tasks" in body) {
        const chain = postingChain(body.tasks[0]?.chain);
        const results = await listings.listBatch(chain, principal.wallet, body.txHash, body.tasks);
        if (results.some((r) => r.status === "failed")) {
          throw new MarketError("INDEX_FAILED", `${results.filter((r) => r.status === "failed").length} of ${results.length} tasks were not listed.`, {
            details: results,
          });
        }
        return ok({ results: results.map(({ taskHash, status }) => ({ taskHash, status: status as "listed" | "already_listed" })) });
      }
      return ok(await listings.listOne(postingChain(body.chain), principal.wallet, body));
    },
  );

  const browsePages = new WeakMap<object, string>();
  app.get(
    "/api/v1/a2a/tasks",
    {
      schema: {
        tags: ["marketplace"],
        summary: "Browse open tasks the caller can take",
        description:
          "A task is listed only when every capability it requires is in `capabilities` (tasks requiring none always are). " +
          "At most 100 per call, newest first. Pinned tasks show only to their agent. `total` counts every matching open " +
          "task; when the page is full it may lag by up to 2 seconds.",
        querystring: Type.Object({ capabilities: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false }),
        security: OPTIONAL_CREDENTIALS,
        response: { 200: Envelope(Type.Object({ tasks: Type.Array(TaskView), total: Type.Integer() })), ...errorResponses(401) },
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
    "/api/v1/a2a/tasks/posted",
    {
      schema: {
        tags: ["posting"],
        summary: "The caller's posted tasks, newest first",
        security: CREDENTIALS,
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "1 to 1000; default 100." })),
            cursor: Type.Optional(Type.String({ pattern: "^[0-9]{1,16}_0x[0-9a-f]{64}$", description: "`nextCursor` of the previous page." })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(Type.Object({ tasks: Type.Array(TaskView), nextCursor: Type.Union([Type.String(), Type.Null()]) })),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      const limit = Math.max(1, Math.min(Number(request.query.limit ?? 100), 1000));
      const cursor = request.query.cursor?.split("_");
      const before = cursor ? { listedAt: Number(cursor[0]), taskHash: cursor[1]! } : undefined;
      return ok(await queries.posted(principal.wallet, { limit, before }));
    },
  );

  app.get(
    "/api/v1/tasks/:taskHash",
    {
      schema: {
        tags: ["marketplace"],
        summary: "One listed task: its public metadata and state",
        description: "`state.resultData.output` (the latest delivered result) shows only to the task's poster, worker and designated verifier.",
        security: OPTIONAL_CREDENTIALS,
        params: Type.Object({ taskHash: Type.String({ maxLength: 100 }) }),
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

}
