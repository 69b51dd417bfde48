import { Type } from "@sinclair/typebox";
import type { App, Context } from "../app";
import { Address, Envelope, errorResponses, ok } from "../http/schemas";
import { MarketError } from "../../core/errors";

/** A chain is ready when its indexer is at most this many blocks behind its confirmation depth. */
export const READY_LAG_BLOCKS = 10;

const ChainLag = Type.Object({
  chain: Type.String(),
  headBlock: Type.Union([Type.Integer(), Type.Null()]),
  indexedBlock: Type.Union([Type.Integer(), Type.Null()]),
  lagBlocks: Type.Union([Type.Integer(), Type.Null()]),
  ready: Type.Boolean(),
  error: Type.Optional(Type.String()),
});

export function healthRoutes(app: App, { db, chains, now, custody }: Context) {
  app.get(
    "/health",
    {
      schema: {
        tags: ["health"],
        summary: "Liveness: the process answers",
        response: { 200: Envelope(Type.Object({ status: Type.Literal("ok"), time: Type.Integer() })) },
      },
    },
    async () => ok({ status: "ok" as const, time: now() }),
  );

  app.get(
    "/health/ready",
    {
      schema: {
        tags: ["health"],
        summary: "Readiness: the database answers and each chain's indexer lag in blocks",
        description: `503 \`NOT_READY\` when the database fails or an indexer is more than ${READY_LAG_BLOCKS} blocks (beyond its confirmation depth) behind.`,
        response: { 200: Envelope(Type.Object({ ready: Type.Literal(true), chains: Type.Array(ChainLag) })), ...errorResponses(503) },
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

  app.get(
    "/api/v1/health/settlement",
    {
      schema: {
        tags: ["health"],
        summary: "Per chain: chain id, escrow, settlement token, whether new tasks are postable, batch creation",
        response: {
          200: Envelope(
            Type.Object({
              chains: Type.Array(
                Type.Object({
                  chain: Type.String(),
                  chainId: Type.Integer(),
                  escrowAddress: Address,
                  token: Address,
                  postable: Type.Boolean(),
                  batchCreate: Type.Object({ supported: Type.Boolean(), maxBatch: Type.Integer() }),
                }),
              ),
              custodyPublicKey: Type.Union([Type.String({ pattern: "^[0-9a-f]{130}$" }), Type.Null()], {
                description: "Uncompressed secp256k1 public key (hex) a `keyCustodyBlob` wraps the brief key to; null when this server holds no custody key.",
              }),
            }),
          ),
          ...errorResponses(503),
        },
      },
    },
    async () =>
      ok({
        chains: await Promise.all(
          chains.list().map(async (chain) => ({
            chain: chain.name,
            chainId: chain.config.chainId,
            escrowAddress: chain.config.escrow,
            token: chain.config.token,
            postable: chain.config.postable,
            batchCreate: await chain.batchCreate(),
          })),
        ),
        custodyPublicKey: custody.publicKey,
      }),
  );
}
