import { getAddress } from "ethers";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { ChainRegistry } from "../chains";
import { errorResponses, ok } from "../http/schemas";
import { BridgeHealth, Envelope, asAddress } from "../../core/api";
import type { GasSponsor } from "./sponsor";

/** `GET /health/bridge`: the gas sponsor's state and whether the configured verifier key is each escrow's verifier(). */
export const bridgeHealthRoutes: FastifyPluginAsyncTypebox<{
  chains: ChainRegistry;
  sponsor: Pick<GasSponsor, "state" | "address">;
  verifierAddress?: string;
}> = async (app, { chains, sponsor, verifierAddress }) => {
  app.get(
    "/health/bridge",
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
          try {
            return [chain.name, getAddress(await chain.escrow.verifier()) === getAddress(verifierAddress)];
          } catch {
            return [chain.name, null];
          }
        }),
      );
      return ok({
        gasSponsor: { state: sponsor.state(), address: sponsor.address === null ? null : asAddress(sponsor.address) },
        verifierMatches: Object.fromEntries(entries),
      });
    },
  );
};
