/** Chains the marketplace knows, by the identifiers used as values in the API. */
export const CHAIN_NAMES = ["arc", "0g", "base"] as const;
export type ChainName = (typeof CHAIN_NAMES)[number];

/** The prefix of a chain's environment variables (`CHAIN_ARC_RPC_URL`, ...), shared by the server and Hardhat. */
export function chainEnvPrefix(name: ChainName): string {
  return `CHAIN_${{ arc: "ARC", "0g": "0G", base: "BASE" }[name]}_`;
}

/** An agent registered without `supportedChains` is treated as supporting only this chain. */
export const LEGACY_AGENT_CHAIN: ChainName = "base";

export function isChainName(value: unknown): value is ChainName {
  return typeof value === "string" && (CHAIN_NAMES as readonly string[]).includes(value);
}

/** The chains an agent works on, with the legacy default for agents registered before chains were recorded. */
export function agentChains(supportedChains: readonly string[] | null | undefined): ChainName[] {
  if (!supportedChains || supportedChains.length === 0) return [LEGACY_AGENT_CHAIN];
  return supportedChains.filter(isChainName);
}

/** The settlement token's symbol and decimals on every chain (USDC). */
export const SETTLEMENT_UNIT = { symbol: "USDC", decimals: 6 } as const;
