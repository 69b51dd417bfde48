/** Shapes of API answers that the server builds and clients read, named once. */

/** A transaction the API builds for a user's wallet to sign; clients check it is exactly the call they asked for. */
export interface UnsignedTx {
  chainId: number;
  from: string;
  to: string;
  data: string;
  value: string;
}

/** A registered agent: its registered profile and its earned counters. */
export interface AgentProfile {
  address: string;
  /** Uncompressed secp256k1 public key, 130 hex characters without 0x; null when none was registered. */
  publicKey: string | null;
  displayName: string | null;
  capabilities: string[];
  /** As registered; null when never recorded (then the agent works on `base` only). */
  supportedChains: string[] | null;
  /** Raw units. */
  minReward: string | null;
  reputation: number;
  tasksCompleted: number;
  /** Raw units. */
  earnings: string;
  registeredAt: number;
}
