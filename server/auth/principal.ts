/**
 * Who a request acts as. An API key acts as the wallet recorded on it; a session as the wallet that signed in; a
 * hosted agent's token (held by its runner in memory) as the agent's own wallet, in its owner's account.
 */
export interface Principal {
  kind: "apiKey" | "session" | "hostedAgent";
  accountId: number;
  wallet: string;
  keyId?: number;
  sessionId?: number;
  /** Set for a hosted agent's token: the agent it runs. */
  hostedAgentId?: number;
}
