/** What the hosted agents' operations (deploy.ts, lifecycle.ts, wallet.ts, conversation.ts, service.ts) are built from. */
import type { Db } from "../db";
import type { Chain } from "../chains";
import type { HostedConfig } from "../config";
import type { Sandbox } from "../sandbox";
import type { SkillStore } from "../skills";
import type { HostedStore } from "./store";
import type { DeployFees } from "./fees";
import type { HostedRunners } from "./runner";
import { MarketError } from "@market/core/errors";

/** The settlement token's calls the service makes from an agent's wallet. */
export const ERC20 = ["function balanceOf(address) view returns (uint256)", "function transfer(address to, uint256 amount) returns (bool)"];

export const invalid = (field: string, message: string) =>
  new MarketError("VALIDATION_FAILED", `${field} ${message}`, { details: [{ field, message }] });

/** A new hosted agent, as the deploy hook sees it. */
export interface DeployedAgent {
  id: number;
  /** Its wallet, generated and custodied by the service. */
  address: string;
  /** The wallet's uncompressed secp256k1 public key (0x04…): the key its briefs are wrapped to. */
  publicKey: string;
  accountId: number;
  ownerAddress: string;
  displayName: string;
}

/**
 * What runs once for every new agent, after its record (with its fee credit) is committed and before it starts: the
 * one place a deploy hands the agent to other features (the identity token's mint, issue 13). A failure is recorded
 * as the agent's `lastError` and logged; the deploy stands (its fee is credited and its wallet exists).
 */
export type OnDeployed = (agent: DeployedAgent) => Promise<void>;

export interface HostedAgentsDeps {
  db: Db;
  store: HostedStore;
  fees: DeployFees;
  runners: HostedRunners;
  skills: Pick<SkillStore, "forInstall">;
  settlementChain: () => Chain;
  config: Pick<HostedConfig, "deploysPerHour" | "maxAgentsPerAccount" | "allowPrivateNetworks" | "masterKey" | "walletHoldMs">;
  now: () => number;
  onDeployed?: OnDeployed;
  /** Sandbox tools are refused (SANDBOX_UNAVAILABLE) when it has no working sandbox. */
  sandbox: Pick<Sandbox, "requireAvailable">;
}
