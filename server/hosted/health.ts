import { getAddress } from "ethers";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { ChainRegistry } from "../chains";
import { errorResponses, ok } from "../http/schemas";
import { BridgeHealth, Envelope, asAddress } from "@market/core/api";
import type { GasSponsor } from "./sponsor";

/** How long each chain's verifier() read is reused by `GET /health/bridge` (issue 23: a public route makes no chain read per request). */
export const BRIDGE_HEALTH_CACHE_MS = 30_000;

/**
 * `GET /health/bridge` (under HEALTH_PREFIX): the gas sponsor's state and whether the configured verifier key is each escrow's verifier().
 * Each chain's answer is read at most once per `BRIDGE_HEALTH_CACHE_MS` (concurrent requests share one read).
 */
export const bridgeHealthRoutes: FastifyPluginAsyncTypebox<{
  chains: ChainRegistry;
  sponsor: Pick<GasSponsor, "state" | "address">;
  verifierAddress?: string;
  now?: () => number;
}> = async (app, { chains, sponsor, verifierAddress, now = Date.now }) => {
  const cached = new Map<string, { at: number; answer: Promise<boolean | null> }>();
  const matches = (chain: ReturnType<ChainRegistry["list"]>[number]): Promise<boolean | null> => {
    const hit = cached.get(chain.name);
    if (hit && now() - hit.at < BRIDGE_HEALTH_CACHE_MS) return hit.answer;
    const answer = (async () => {
      try {
        return getAddress(await chain.escrow.verifier()) === getAddress(verifierAddress!);
      } catch {
        return null;
      }
    })();
    cached.set(chain.name, { at: now(), answer });
    return answer;
  };
  app.get(
    "/bridge",
    {
      schema: {
        tags: ["health"],
        summary: "Gas sponsor state and, per chain, whether the configured verifier key is the escrow's verifier()",
        response: { 200: Envelope(BridgeHealth), ...errorResponses() },
      },
    },
    async () => {
      const entries = await Promise.all(
        chains.list().map(async (chain): Promise<[string, boolean | null]> => {
          if (!verifierAddress) return [chain.name, null];
          return [chain.name, await matches(chain)];
        }),
      );
      return ok({
        gasSponsor: { state: sponsor.state(), address: sponsor.address === null ? null : asAddress(sponsor.address) },
        verifierMatches: Object.fromEntries(entries),
      });
    },
  );
};
