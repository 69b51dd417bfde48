import { Type, type Static } from "@sinclair/typebox";
import { Address, ChainNameString } from "./common";

/** GET /health. */
export const Liveness = Type.Object({
  status: Type.Literal("ok"),
  time: Type.Integer(),
  /**
   * The leases this API process holds (docs/scaling.md): `indexer:<chain>`, `sender:<chain>:<verifier address>`,
   * `hosted-runners`. Empty for a process that only answers requests.
   */
  leases: Type.Array(Type.String()),
  /** Whether JS Eval and Sandbox tools can run here (issue 26): a bubblewrap sandbox ran `sh` and Node; else why not. */
  sandbox: Type.Optional(Type.Object({ available: Type.Boolean(), reason: Type.Union([Type.String(), Type.Null()]) })),
});

/** One chain's indexer against its head. */
export const ChainLag = Type.Object({
  chain: Type.String(),
  headBlock: Type.Union([Type.Integer(), Type.Null()]),
  indexedBlock: Type.Union([Type.Integer(), Type.Null()]),
  lagBlocks: Type.Union([Type.Integer(), Type.Null()]),
  ready: Type.Boolean(),
  error: Type.Optional(Type.String()),
});
export type ChainLag = Static<typeof ChainLag>;

/** GET /health/ready. */
export const Readiness = Type.Object({ ready: Type.Literal(true), chains: Type.Array(ChainLag) });

/** One chain as GET /api/v1/health/settlement reports it. */
export const Settlement = Type.Object({
  chain: ChainNameString,
  chainId: Type.Integer(),
  escrowAddress: Address,
  token: Address,
  postable: Type.Boolean({ description: "Whether a new task can be funded here now: the posting chain, its escrow not paused." }),
  notPostableReason: Type.Optional(
    Type.Union([Type.Literal("CHAIN_NOT_POSTABLE"), Type.Literal("ESCROW_PAUSED")], {
      description: "Why `postable` is false: not the posting chain, or its escrow is paused (as indexed).",
    }),
  ),
  batchCreate: Type.Object({ supported: Type.Boolean(), maxBatch: Type.Integer() }),
});
export type Settlement = Static<typeof Settlement>;

/** GET /api/v1/health/settlement. */
export const SettlementAnswer = Type.Object({
  chains: Type.Array(Settlement),
  custodyPublicKey: Type.Union([Type.String({ pattern: "^[0-9a-f]{130}$" }), Type.Null()], {
    description: "Uncompressed secp256k1 public key (hex) a `keyCustodyBlob` wraps the brief key to; null when this server holds no custody key.",
  }),
});
export type SettlementAnswer = Static<typeof SettlementAnswer>;
