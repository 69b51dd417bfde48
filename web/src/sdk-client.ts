/**
 * The SDK's client in the page: `MarketClient` acting as the signed-in session (its token is the API credential), with
 * the browser wallet (EIP-1193) signing behind the SDK's transaction guard. Bulk posting, private tasks, renting a
 * service and hosted agents use it, so the page posts, rents and deploys through the code the CLI runs. Only pages
 * loaded on first visit import this module (it brings the SDK, ethers and the brief encryption): never the first load.
 */
import { MarketClient } from "../../sdk/src/client";
import { createHttp } from "../../sdk/src/http";
import { watchTask, type TaskWatch } from "../../sdk/src/events";
import type { Settlement, SettlementAnswer } from "@market/core/api";

/** What the service settles on, and the custody key web posts wrap a copy of each private brief key to. */
export async function settlementTerms(): Promise<{ settlement: Settlement; custodyPublicKey: string | null }> {
  const data = await createHttp({ baseUrl: window.location.origin }).get<SettlementAnswer>("/api/v1/health/settlement");
  const settlement = data.chains.find((c) => c.postable) ?? data.chains[0];
  if (!settlement) throw new Error("The service settles on no chain.");
  return { settlement, custodyPublicKey: data.custodyPublicKey };
}

export interface SessionClient {
  client: MarketClient;
  settlement: Settlement;
  custodyPublicKey: string | null;
  /** Waits on a task's events with the session (the SDK's `watchTask`), for `waitForResult`. */
  watch(taskHash: string, chain: string): Promise<TaskWatch>;
}

/**
 * A client acting as the signed-in wallet. The page is the service's own: it trusts the escrow the service names (the
 * CLI pins it from its environment); the SDK still checks that the browser wallet is the session's wallet
 * (`OWNER_MISMATCH`) and on the settlement's chain (`WRONG_CHAIN`) before anything is signed.
 */
export async function sessionClient(session: { token: string }): Promise<SessionClient> {
  const { settlement, custodyPublicKey } = await settlementTerms();
  const baseUrl = window.location.origin;
  const client = new MarketClient({
    apiKey: "",
    sessionToken: session.token,
    baseUrl,
    escrows: { [settlement.chain]: settlement.escrowAddress },
    // Reads need no wallet; a transaction without one is refused by the SDK before anything is built.
    ...(window.ethereum ? { injected: { provider: window.ethereum } } : {}),
  });
  return {
    client,
    settlement,
    custodyPublicKey,
    watch: (taskHash, chain) => watchTask({ baseUrl, sessionToken: session.token, taskHash, chain }),
  };
}
