import type { TSchema } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import type { Accepting } from "./accept";
import type { Bidding } from "./bids";
import type { Delivering } from "./delivery";
import type { SettlementCalls } from "./onchain";
import {
  AddKeysAnswer,
  AddKeysBody,
  Assigned,
  BidAnswer,
  BidBody,
  BidsAnswer,
  DeclineAnswer,
  DeliverBody,
  Delivered,
  Envelope,
  EvidenceBody,
  EvidenceSent,
  FinalizeBody,
  Finalized,
  SettlementTx,
  TaskActionParams,
  type SettlementAction,
} from "@market/core/api";

/** Taking, delivering and settling tasks. */
export { createAccepting, ACCEPT_LOCK_TTL_MS, type Accepting } from "./accept";
export { createBidding, type Bidding } from "./bids";
export { createDelivery, type Delivering, type DeliveryDeps } from "./delivery";
export { createSettlementCalls, type SettlementCalls } from "./onchain";
export { createOffers, type Offers } from "./offers";
export { createCustody, type Custody } from "./custody";
export type { MarketplaceDeps } from "./deps";

export interface MarketplaceRouteDeps {
  auth: Authenticate;
  accepting: Accepting;
  bidding: Bidding;
  delivery: Delivering;
  settlement: SettlementCalls;
}

/** The schema of a POST route on one task, authenticated, answering `data` of the given schema. */
const taskAction = <R extends TSchema>(summary: string, description: string, response: R) => ({
  tags: ["marketplace"],
  summary,
  description,
  security: CREDENTIALS,
  params: TaskActionParams,
  response: { 200: Envelope(response), ...errorResponses(401, 403, 404, 409, 503) },
});

/** The prefix app.ts registers `marketplaceRoutes` under. */
export const MARKETPLACE_PREFIX = "/api/v1/a2a/tasks/:taskHash";

/**
 * Taking, delivering and settling tasks: paths under MARKETPLACE_PREFIX, every one authenticated by the plugin's hook,
 * which the three encapsulated children inherit.
 */
export const marketplaceRoutes: FastifyPluginAsyncTypebox<MarketplaceRouteDeps> = async (app, { auth, accepting, bidding, delivery, settlement }) => {
  app.addHook("onRequest", authenticated(auth));
  await app.register(takingRoutes, { accepting, bidding });
  await app.register(deliveringRoutes, { delivery });
  await app.register(settlingRoutes, { settlement });
};

/** Taking a task: accept, bid (and the poster's bids and key wraps), decline an offer. */
const takingRoutes: FastifyPluginAsyncTypebox<Pick<MarketplaceRouteDeps, "accepting" | "bidding">> = async (app, { accepting, bidding }) => {
  app.post(
    "/accept",
    {
      schema: taskAction(
        "Take an open task",
        "Every accept condition is checked (capabilities, minReward, chain, brief key wrapped or re-wrappable, exclusive " +
          "offer, pinned agent, not the poster, an agent of the poster's account or the verifier, public key registered; one " +
          "accept at a time). The service's marketplace verifier key then sends marketplaceAssign (the agent pays nothing) " +
          "and the answer comes once it is confirmed, with the brief (or how to open it). Accepting a task the agent holds " +
          "answers the same assignment. `TX_PENDING`: the assignment is sent but not confirmed yet; retry.",
        Assigned,
      ),
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await accepting.accept(wallet, request.params.taskHash));
    },
  );

  app.post(
    "/bid",
    {
      schema: {
        ...taskAction(
          "Register interest in a task whose brief is not wrapped to the agent",
          "The poster reads bids and may wrap the brief key to bidders (POST .../keys).",
          BidAnswer,
        ),
        body: BidBody,
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await bidding.bid(wallet, request.params.taskHash, request.body?.message));
    },
  );

  app.get(
    "/bids",
    {
      schema: {
        tags: ["marketplace"],
        summary: "The task's bids (poster only)",
        security: CREDENTIALS,
        params: TaskActionParams,
        response: { 200: Envelope(BidsAnswer), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok({ bids: await bidding.bids(principal.wallet, request.params.taskHash) });
    },
  );

  app.post(
    "/keys",
    {
      schema: {
        ...taskAction(
          "Wrap a private brief's key to more agents (poster only)",
          "Adds `wrappedKeys` (agent address to hex ECIES-wrapped key) for registered agents, e.g. bidders.",
          AddKeysAnswer,
        ),
        body: AddKeysBody,
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await bidding.addKeys(wallet, request.params.taskHash, request.body.wrappedKeys));
    },
  );

  app.post(
    "/decline",
    { schema: taskAction("Give up an exclusive offer: the task opens to every eligible agent at once", "", DeclineAnswer) },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await accepting.decline(wallet, request.params.taskHash));
    },
  );
};

/** Delivering a round: the result, its signed evidence (or a rebroadcast), then verification. */
const deliveringRoutes: FastifyPluginAsyncTypebox<Pick<MarketplaceRouteDeps, "delivery">> = async (app, { delivery }) => {
  app.post(
    "/deliver",
    {
      schema: {
        ...taskAction(
          "Deliver a result: stores it and answers the submitEvidence transaction to sign",
          "Only the accepted executor, before the deadline, at most 3 submissions. The result hash is the SHA-256 of the " +
            "output. Sign the transaction with the executor's wallet and send it (or relay it with POST .../evidence), then finalize.",
          Delivered,
        ),
        body: DeliverBody,
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await delivery.deliver(wallet, request.params.taskHash, request.body.output));
    },
  );

  app.post(
    "/evidence",
    {
      schema: {
        ...taskAction(
          "Relay the executor's signed submitEvidence transaction",
          "The transaction must be exactly submitEvidence of the delivered result, from the executor's wallet to the escrow; it is kept for rebroadcast.",
          EvidenceSent,
        ),
        body: EvidenceBody,
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await delivery.relayEvidence(wallet, request.params.taskHash, request.body.signedTx));
    },
  );

  app.post(
    "/rebroadcast",
    { schema: taskAction("Send the relayed evidence transaction again (only the accepted executor)", "", EvidenceSent) },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await delivery.rebroadcast(wallet, request.params.taskHash));
    },
  );

  app.post(
    "/finalize",
    {
      schema: {
        ...taskAction(
          "After the evidence is mined: run verification",
          "`auto`: the rule engine judges and the service settles the verdict on chain; answers `status` (verified or " +
            "failed) and `verificationResult { passed, score, reasons }`. `manual` / `agent`: answers `awaiting_verification`. " +
            "`EVIDENCE_NOT_CONFIRMED`: the evidence is not mined or indexed yet; retry.",
          Finalized,
        ),
        body: FinalizeBody,
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await delivery.finalize(wallet, request.params.taskHash, request.body?.txHash));
    },
  );
};

/** The settlement calls a task's party signs itself: release, cancel, claim after the deadline, dispute, collect. */
const settlingRoutes: FastifyPluginAsyncTypebox<Pick<MarketplaceRouteDeps, "settlement">> = async (app, { settlement }) => {
  app.post(
    "/release",
    {
      schema: taskAction(
        "Hand an assigned task back before delivering (worker's own transaction)",
        "Answers the unsigned releaseTask for the worker's wallet; once mined the task is open again.",
        SettlementTx,
      ),
    },
    async (request) => {
      const { wallet } = principalOf(request);
      return ok(await settlement.release(wallet, request.params.taskHash));
    },
  );

  const settlementRoutes: Array<[SettlementAction, string, string, (wallet: string, taskHash: string) => Promise<SettlementTx>]> = [
    ["cancel", "Cancel an open task (poster's own transaction)", "While Funded: 100% back to the poster.", settlement.cancel],
    [
      "claim-timeout",
      "Claim after the deadline (poster's own transaction)",
      "Refunds a task never delivered, a failed round 3 days after the verdict, a dispute 14 days after it was raised; escalates delivered work nobody judged.",
      settlement.claimTimeout,
    ],
    [
      "dispute",
      "Raise a dispute (poster or worker's own transaction)",
      "Poster before the deadline; worker before it or within 3 days of a failed verdict.",
      settlement.dispute,
    ],
    [
      "release-unjudged",
      "Collect escalated work 14 days after escalation (worker's own transaction)",
      "Pays with the fee unless the admin ruled first.",
      settlement.releaseUnjudged,
    ],
  ];
  for (const [action, summary, description, call] of settlementRoutes) {
    app.post(
      `/${action}`,
      {
        schema: taskAction(
          summary,
          `${description} The answer is the unsigned transaction; the outcome shows once the indexer sees it.`,
          SettlementTx,
        ),
      },
      async (request) => {
        const { wallet } = principalOf(request);
        return ok(await call(wallet, request.params.taskHash));
      },
    );
  }
};
