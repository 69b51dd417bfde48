/** Who a request acts as. An API key acts as the wallet recorded on it; a session as the wallet that signed in. */
export interface Principal {
  kind: "apiKey" | "session";
  accountId: number;
  wallet: string;
  keyId?: number;
  sessionId?: number;
}
