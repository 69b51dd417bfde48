import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Db } from "../db";
import type { ChainRegistry } from "../chains";
import type { Clock } from "../http/types";
import { errorResponses, ok } from "../http/schemas";
import { Envelope, Liveness, Readiness, SettlementAnswer, asAddress } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { escrowPaused } from "../tasks";

/** A chain is ready when its indexer is at most this many blocks behind its confirmation depth. */
export const READY_LAG_BLOCKS = 10;

export interface HealthDeps {
  db: Db;
  chains: ChainRegistry;
  now: Clock;
  /** The public key `keyCustodyBlob`s are wrapped to; null when this server holds no custody key. */
  custodyPublicKey: string | null;
  /** The leases this process holds now (server/db/leases.ts). */
  leases: () => readonly string[];
  /** Whether this machine has a working sandbox for JS Eval and Sandbox tools (server/sandbox), probed once. */
  sandbox?: () => Promise<{ available: boolean; reason: string | null }>;
}

/** The prefix app.ts registers `healthRoutes` under (and the hosting's `bridgeHealthRoutes`). */
export const HEALTH_PREFIX = "/health";
/** The prefix app.ts registers `settlementRoutes` under. */
export const SETTLEMENT_PREFIX = "/api/v1/health";

/** Liveness and readiness (database and indexer lag), under HEALTH_PREFIX. */
export const healthRoutes: FastifyPluginAsyncTypebox<Omit<HealthDeps, "custodyPublicKey">> = async (app, { db, chains, now, leases, sandbox }) => {
  app.get(
    "/",
    {
      schema: {
        tags: ["health"],
        summary: "Liveness: the process answers, with the leases it holds (which chain it indexes, which key it sends for)",
        response: { 200: Envelope(Liveness) },
      },
    },
    async () => ok({ status: "ok" as const, time: now(), leases: [...leases()], ...(sandbox ? { sandbox: await sandbox() } : {}) }),
  );

  app.get(
    "/ready",
    {
      schema: {
        tags: ["health"],
        summary: "Readiness: the database answers and each chain's indexer lag in blocks",
        description: `503 \`NOT_READY\` when the database fails or an indexer is more than ${READY_LAG_BLOCKS} blocks (beyond its confirmation depth) behind.`,
        response: { 200: Envelope(Readiness), ...errorResponses(503) },
      },
    },
    async () => {
      const cursors = await db.selectFrom("indexer_cursors").select(["chain", "block_number"]).execute();
      const indexed = new Map(cursors.map((c) => [c.chain, Number(c.block_number)]));
      const report = await Promise.all(
        chains.list().map(async (chain) => {
          const indexedBlock = indexed.get(chain.name) ?? null;
          try {
            const headBlock = await chain.provider.getBlockNumber();
            const lagBlocks = indexedBlock === null ? null : Math.max(0, headBlock - indexedBlock);
            const ready = lagBlocks !== null && lagBlocks <= chain.config.confirmations + READY_LAG_BLOCKS;
            return { chain: chain.name, headBlock, indexedBlock, lagBlocks, ready };
          } catch (error) {
            return { chain: chain.name, headBlock: null, indexedBlock, lagBlocks: null, ready: false, error: (error as Error).message };
          }
        }),
      );
      if (report.some((c) => !c.ready)) {
        throw new MarketError("NOT_READY", "An indexer is behind or a chain does not answer.", {
          details: report.map((c) => ({ ...c, message: c.ready ? "ready" : (c.error ?? `${c.lagBlocks ?? "unknown"} blocks behind`) })),
        });
      }
      return ok({ ready: true as const, chains: report });
    },
  );
};

/** The settlement chains, under SETTLEMENT_PREFIX. */
export const settlementRoutes: FastifyPluginAsyncTypebox<Pick<HealthDeps, "db" | "chains" | "custodyPublicKey">> = async (
  app,
  { db, chains, custodyPublicKey },
) => {
  app.get(
    "/settlement",
    {
      schema: {
        tags: ["health"],
        summary: "Per chain: chain id, escrow, settlement token, whether new tasks are postable, batch creation",
        response: { 200: Envelope(SettlementAnswer), ...errorResponses(503) },
      },
    },
    async () =>
      ok({
        chains: await Promise.all(
          chains.list().map(async (chain) => {
            const notPostableReason = !chain.config.postable
              ? ("CHAIN_NOT_POSTABLE" as const)
              : (await escrowPaused(db, chain.name))
                ? ("ESCROW_PAUSED" as const)
                : undefined;
            return {
              chain: chain.name,
              chainId: chain.config.chainId,
              escrowAddress: asAddress(chain.config.escrow),
              token: asAddress(chain.config.token),
              postable: notPostableReason === undefined,
              ...(notPostableReason ? { notPostableReason } : {}),
              batchCreate: await chain.batchCreate(),
            };
          }),
        ),
        custodyPublicKey,
      }),
  );
};
