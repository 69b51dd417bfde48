/**
 * The product listening on loopback for end-to-end tests of the SDK, the worker runtime and the CLI: the API on a free
 * port over the in-process chain (indexer and verifier outbox running), and the chain's JSON-RPC on another port.
 */
import { startTestServer, privateKeyOf, type TestServerOptions } from "../server/harness";
import { serveNetwork } from "../indexer/helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";

export async function startStack(options: TestServerOptions = {}) {
  const server = await startTestServer(options);
  await server.app.listen({ host: "127.0.0.1", port: 0 });
  const address = server.app.server.address();
  const apiUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const rpc = await serveNetwork();

  /** What an SDK client needs to act as this signer: its API key, its key, the RPC and the pinned escrow. */
  async function clientOptions(signer: HardhatEthersSigner, apiKey?: string) {
    const privateKey = privateKeyOf(signer);
    return {
      apiKey: apiKey ?? (await server.apiKeyFor(signer)),
      baseUrl: apiUrl,
      executor: { privateKey, rpcUrls: { arc: rpc.url } },
      escrows: { arc: server.escrowAddress },
    };
  }

  return {
    ...server,
    apiUrl,
    rpcUrl: rpc.url,
    clientOptions,
    async close() {
      await rpc.close();
      await server.close();
    },
  };
}

export type Stack = Awaited<ReturnType<typeof startStack>>;
