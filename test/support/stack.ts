/**
 * The product listening on loopback for end-to-end tests of the SDK, the worker runtime and the CLI: the API on a free
 * port over the in-process chain (indexer and verifier outbox running), and the chain's JSON-RPC on another port.
 */
import { serverFixture, startTestServer, privateKeyOf, type TestServer, type TestServerOptions } from "../server/harness";
import { serveNetwork } from "../indexer/helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";

export async function startStack(options: TestServerOptions = {}) {
  return serve(await startTestServer(options), options);
}

/**
 * A stack started from a seeded snapshot (see `serverFixture`): `seed` runs once, each call starts the stack from the
 * chain and the database as the seed left them, with what the seed answered. Made once per suite, at module level.
 */
export function stackFixture<Seed>(
  seed: (s: TestServer) => Promise<Seed>,
  options: TestServerOptions = {},
): () => Promise<{ stack: Stack; seeded: Seed }> {
  const seededServer = serverFixture(seed, options);
  return async () => {
    const { server, seeded } = await seededServer();
    return { stack: await serve(server, options), seeded };
  };
}

/** Listens on loopback: on the port of `options.publicUrl` when it names one (the URL the sign-in messages carry), else any. */
async function serve(server: TestServer, options: TestServerOptions = {}) {
  const port = options.publicUrl ? Number(new URL(options.publicUrl).port || 0) : 0;
  await server.app.listen({ host: "127.0.0.1", port });
  const address = server.app.server.address();
  const apiUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const rpc = await serveNetwork();
  // Hosted agents run against this API on loopback, signing through the served chain.
  await server.hosting.attach({ apiUrl, rpcUrls: { arc: rpc.url }, escrows: { arc: server.escrowAddress } });

  /** What an SDK client needs to act as this signer: its API key (a new one unless given), its key, the RPC and the pinned escrow. */
  async function clientOptions(signer: HardhatEthersSigner, apiKey?: string) {
    const privateKey = privateKeyOf(signer);
    return {
      apiKey: apiKey ?? (await server.apiKeyFor(signer)),
      baseUrl: apiUrl,
      executor: { privateKey, rpcUrls: { arc: rpc.url } },
      escrows: { arc: server.escrowAddress },
    };
  }

  /** What a WorkerRuntime needs to work as this signer: the same key, API, wallet key, RPC and pinned escrow. */
  async function runtimeOptions(signer: HardhatEthersSigner, apiKey?: string) {
    const { executor, ...options } = await clientOptions(signer, apiKey);
    return { ...options, privateKey: executor.privateKey, rpcUrls: executor.rpcUrls };
  }

  return {
    ...server,
    apiUrl,
    rpcUrl: rpc.url,
    clientOptions,
    runtimeOptions,
    async close() {
      await server.hosting.close();
      await rpc.close();
      await server.close();
    },
  };
}

export type Stack = Awaited<ReturnType<typeof serve>>;
