import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { App, Context } from "../app";
import { Address, CREDENTIALS, Envelope, errorResponses, ok } from "../http/schemas";
import { UnsignedTx } from "../tasks/schemas";
import { createAccepting } from "./accept";
import { createDelivery, MAX_OUTPUT_CHARS } from "./delivery";
import { createSettlementCalls } from "./onchain";

export { createOffers, type Offers } from "./offers";
export { createCustody, type Custody } from "./custody";
export type { MarketplaceDeps } from "./accept";

const TaskParams = Type.Object({ taskHash: Type.String({ maxLength: 100, description: "Task hash (0x + 64 hex)." }) });

const Assigned = Type.Object({
  taskHash: Type.String(),
  chain: Type.String(),
  escrowAddress: Address,
  worker: Address,
  status: Type.Literal("assigned"),
  assignTx: Type.Union([Type.String(), Type.Null()]),
  deadline: Type.Integer(),
  rounds: Type.Integer(),
  brief: Type.Object({
    privacy: Type.Union([Type.Literal("public"), Type.Literal("private")]),
    publicBrief: Type.Optional(Type.String({ description: "The whole public brief." })),
    routingSummary: Type.Optional(Type.String()),
    rootHash: Type.Optional(Type.String({ description: "Download the ciphertext: GET /api/v1/storage/{rootHash}." })),
    wrappedKey: Type.Optional(Type.String({ description: "The brief key ECIES-wrapped to this agent (hex)." })),
  }),
  verification: Type.Object({
    mode: Type.String(),
    criteria: Type.Optional(Type.Object({}, { additionalProperties: true })),
    verifierAddress: Type.Optional(Address),
  }),
});

const Finalized = Type.Object({
  taskHash: Type.String(),
  round: Type.Integer(),
  status: Type.String(),
  verificationResult: Type.Optional(Type.Object({ passed: Type.Boolean(), score: Type.Integer(), reasons: Type.Array(Type.String()) })),
  roundsLeft: Type.Integer(),
  txHash: Type.Optional(Type.String()),
});

const SettlementTx = Type.Object({
  taskHash: Type.String(),
  outcome: Type.Union(["refund", "escalate", "dispute", "payout", "reopen"].map((o) => Type.Literal(o))),
  unsignedTx: UnsignedTx,
});

/** Taking, delivering and settling tasks; paths under /api/v1/a2a/tasks/{taskHash}/. */
export function marketplaceRoutes(app: App, ctx: Context) {
  const { auth, market } = ctx;
  const accepting = createAccepting(market);
  const delivery = createDelivery(market);
  const settlement = createSettlementCalls(market);

  /**
   * A POST route on one task, authenticated, answering `data` of the given schema. Registered through the untyped
   * instance: each handler states its body type, which the body schema validates before it runs.
   */
  function taskAction<B extends TSchema | undefined>(
    action: string,
    summary: string,
    description: string,
    body: B,
    response: TSchema,
    handler: (wallet: string, taskHash: string, body: B extends TSchema ? Static<B> : undefined) => Promise<unknown>,
  ) {
    (app as unknown as FastifyInstance).post(
      `/api/v1/a2a/tasks/:taskHash/${action}`,
      {
        schema: {
          tags: ["marketplace"],
          summary,
          description,
          security: CREDENTIALS,
          params: TaskParams,
          ...(body ? { body } : {}),
          response: { 200: Envelope(response), ...errorResponses(401, 403, 404, 409, 503) },
        },
      },
      async (request) => {
        const principal = await auth.required(request);
        const params = request.params as { taskHash: string };
        return ok(await handler(principal.wallet, params.taskHash, request.body as never));
      },
    );
  }

  taskAction(
    "accept",
    "Take an open task",
    "Every accept condition is checked (capabilities, minReward, chain, brief key wrapped or re-wrappable, exclusive " +
      "offer, pinned agent, not the poster, an agent of the poster's account or the verifier, public key registered; one " +
      "accept at a time). The service's marketplace verifier key then sends marketplaceAssign (the agent pays nothing) " +
      "and the answer comes once it is confirmed, with the brief (or how to open it). Accepting a task the agent holds " +
      "answers the same assignment. `TX_PENDING`: the assignment is sent but not confirmed yet; retry.",
    undefined,
    Assigned,
    (wallet, taskHash) => accepting.accept(wallet, taskHash),
  );

  taskAction(
    "bid",
    "Register interest in a task whose brief is not wrapped to the agent",
    "The poster reads bids and may wrap the brief key to bidders (POST .../keys).",
    Type.Object({ message: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: false }),
    Type.Object({ taskHash: Type.String(), agent: Address, wrapped: Type.Boolean() }),
    (wallet, taskHash, body) => accepting.bid(wallet, taskHash, body?.message),
  );

  app.get(
    "/api/v1/a2a/tasks/:taskHash/bids",
    {
      schema: {
        tags: ["marketplace"],
        summary: "The task's bids (poster only)",
        security: CREDENTIALS,
        params: TaskParams,
        response: {
          200: Envelope(
            Type.Object({
              bids: Type.Array(
                Type.Object({
                  agent: Address,
                  message: Type.Union([Type.String(), Type.Null()]),
                  createdAt: Type.Integer(),
                  publicKey: Type.Union([Type.String(), Type.Null()]),
                  capabilities: Type.Array(Type.String()),
                  reputation: Type.Integer(),
                }),
              ),
            }),
          ),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      return ok({ bids: await accepting.bids(principal.wallet, request.params.taskHash) });
    },
  );

  taskAction(
    "keys",
    "Wrap a private brief's key to more agents (poster only)",
    "Adds `wrappedKeys` (agent address to hex ECIES-wrapped key) for registered agents, e.g. bidders.",
    Type.Object({ wrappedKeys: Type.Record(Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" }), Type.String({ pattern: "^(0x)?[0-9a-fA-F]{2,2048}$" })) }, { additionalProperties: false }),
    Type.Object({ taskHash: Type.String(), agents: Type.Array(Type.String()) }),
    (wallet, taskHash, body) => accepting.addKeys(wallet, taskHash, body!.wrappedKeys),
  );

  taskAction(
    "decline",
    "Give up an exclusive offer: the task opens to every eligible agent at once",
    "",
    undefined,
    Type.Object({ taskHash: Type.String(), declined: Type.Boolean() }),
    (wallet, taskHash) => accepting.decline(wallet, taskHash),
  );

  taskAction(
    "release",
    "Hand an assigned task back before delivering (worker's own transaction)",
    "Answers the unsigned releaseTask for the worker's wallet; once mined the task is open again.",
    undefined,
    SettlementTx,
    (wallet, taskHash) => settlement.release(wallet, taskHash),
  );

  taskAction(
    "deliver",
    "Deliver a result: stores it and answers the submitEvidence transaction to sign",
    "Only the accepted executor, before the deadline, at most 3 submissions. The result hash is the SHA-256 of the " +
      "output. Sign the transaction with the executor's wallet and send it (or relay it with POST .../evidence), then finalize.",
    Type.Object({ output: Type.String({ minLength: 1, maxLength: MAX_OUTPUT_CHARS }) }, { additionalProperties: false }),
    Type.Object({ round: Type.Integer(), resultHash: Type.String(), unsignedTx: UnsignedTx }),
    (wallet, taskHash, body) => delivery.deliver(wallet, taskHash, body!.output),
  );

  taskAction(
    "evidence",
    "Relay the executor's signed submitEvidence transaction",
    "The transaction must be exactly submitEvidence of the delivered result, from the executor's wallet to the escrow; it is kept for rebroadcast.",
    Type.Object({ signedTx: Type.String({ pattern: "^0x[0-9a-fA-F]+$", maxLength: 4000 }) }, { additionalProperties: false }),
    Type.Object({ txHash: Type.String() }),
    (wallet, taskHash, body) => delivery.relayEvidence(wallet, taskHash, body!.signedTx),
  );

  taskAction(
    "rebroadcast",
    "Send the relayed evidence transaction again (only the accepted executor)",
    "",
    undefined,
    Type.Object({ txHash: Type.String() }),
    (wallet, taskHash) => delivery.rebroadcast(wallet, taskHash),
  );

  taskAction(
    "finalize",
    "After the evidence is mined: run verification",
    "`auto`: the rule engine judges and the service settles the verdict on chain; answers `status` (verified or " +
      "failed) and `verificationResult { passed, score, reasons }`. `manual` / `agent`: answers `awaiting_verification`. " +
      "`EVIDENCE_NOT_CONFIRMED`: the evidence is not mined or indexed yet; retry.",
    Type.Object({ txHash: Type.Optional(Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" })) }, { additionalProperties: false }),
    Finalized,
    (wallet, taskHash, body) => delivery.finalize(wallet, taskHash, body?.txHash),
  );

  const settlementRoutes: Array<[string, string, string, (wallet: string, taskHash: string) => Promise<unknown>]> = [
    ["cancel", "Cancel an open task (poster's own transaction)", "While Funded: 100% back to the poster.", settlement.cancel],
    [
      "claim-timeout",
      "Claim after the deadline (poster's own transaction)",
      "Refunds a task never delivered, a failed round 3 days after the verdict, a dispute 14 days after it was raised; escalates delivered work nobody judged.",
      settlement.claimTimeout,
    ],
    ["dispute", "Raise a dispute (poster or worker's own transaction)", "Poster before the deadline; worker before it or within 3 days of a failed verdict.", settlement.dispute],
    [
      "release-unjudged",
      "Collect escalated work 14 days after escalation (worker's own transaction)",
      "Pays with the fee unless the admin ruled first.",
      settlement.releaseUnjudged,
    ],
  ];
  for (const [action, summary, description, call] of settlementRoutes) {
    taskAction(action, summary, `${description} The answer is the unsigned transaction; the outcome shows once the indexer sees it.`, undefined, SettlementTx, call);
  }
}
