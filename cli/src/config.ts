/**
 * Where the CLI's settings come from: the environment (MARKET_API_KEY, MARKET_PRIVATE_KEY, MARKET_API_URL,
 * MARKET_RPC_<CHAIN>, MARKET_ESCROW_<CHAIN>), overridden by the global flags for the posting chain. The two secrets
 * are read from the environment only, never from flags (a flag shows in the process list and the shell history).
 */
import { getAddress } from "ethers";
import { clientError } from "../../sdk/src/errors";
import { pinnedEscrowsFromEnv, rpcUrlsFromEnv, type PinnedEscrows, type RpcUrls } from "../../sdk/src/chain";
import type { MarketClientOptions } from "../../sdk/src/client";
import { defaultStateDirectory } from "./funded-index";

export const DEFAULT_API_URL = "http://127.0.0.1:3000";

export interface GlobalFlags {
  apiUrl?: string;
  rpcUrl?: string;
  escrow?: string;
}

export interface CliConfig {
  apiUrl: string;
  /** Where the CLI keeps what outlives one task file (MARKET_STATE_DIR, else ~/.market): the funded-rows index. */
  stateDir: string;
  apiKey?: string;
  privateKey?: string;
  rpcUrls: RpcUrls;
  escrows: PinnedEscrows;
  /**
   * The `fetch` of a program embedding the posting engine (the API server's remote MCP endpoint, posting for a
   * custodied wallet, calls itself in-process); the `market` command sets none.
   */
  fetch?: typeof fetch;
}

export function readConfig(env: NodeJS.ProcessEnv, flags: GlobalFlags): CliConfig {
  const rpcUrls = rpcUrlsFromEnv(env);
  if (flags.rpcUrl) rpcUrls.arc = flags.rpcUrl;
  const escrows = pinnedEscrowsFromEnv(env);
  if (flags.escrow) {
    try {
      escrows.arc = getAddress(flags.escrow);
    } catch {
      throw clientError("VALIDATION_FAILED", `--escrow must be a 0x address, got ${flags.escrow}`);
    }
  }
  const apiKey = env.MARKET_API_KEY?.trim() || undefined;
  const privateKey = env.MARKET_PRIVATE_KEY?.trim() || undefined;
  return {
    apiUrl: flags.apiUrl ?? (env.MARKET_API_URL?.trim() || DEFAULT_API_URL),
    stateDir: defaultStateDirectory(env),
    ...(apiKey ? { apiKey } : {}),
    ...(privateKey ? { privateKey } : {}),
    rpcUrls,
    escrows,
  };
}

/** Client options for a command that acts as the API key's wallet; `signs` when it sends transactions itself. */
export function clientOptions(config: CliConfig, need: { signs: boolean }): MarketClientOptions {
  if (!config.apiKey) throw clientError("AUTH_REQUIRED", "Set MARKET_API_KEY to the API key (sk_...) of the posting wallet.");
  const options: MarketClientOptions = {
    apiKey: config.apiKey,
    baseUrl: config.apiUrl,
    escrows: config.escrows,
    ...(config.fetch ? { fetch: config.fetch } : {}),
  };
  if (config.privateKey) {
    if (!/^(0x)?[0-9a-fA-F]{64}$/.test(config.privateKey)) {
      throw clientError("AUTH_REQUIRED", "MARKET_PRIVATE_KEY is not a private key (64 hex characters, optionally 0x-prefixed).");
    }
    const privateKey = config.privateKey.startsWith("0x") ? config.privateKey : `0x${config.privateKey}`;
    options.executor = { privateKey, rpcUrls: config.rpcUrls };
  } else if (need.signs) {
    throw clientError("AUTH_REQUIRED", "Set MARKET_PRIVATE_KEY to the private key of the API key's wallet; it signs the escrow transactions.");
  }
  return options;
}

/** Client options for public reads only (no key needed). */
export function publicClientOptions(config: CliConfig): MarketClientOptions {
  return { apiKey: "", baseUrl: config.apiUrl, escrows: config.escrows };
}

/** The values that must never reach the terminal. */
export function secretsOf(config: Pick<CliConfig, "apiKey" | "privateKey">): string[] {
  const secrets: string[] = [];
  if (config.apiKey) secrets.push(config.apiKey);
  if (config.privateKey) {
    const bare = config.privateKey.replace(/^0x/, "");
    secrets.push(bare, `0x${bare}`);
  }
  return secrets.filter((s) => s.length >= 8);
}

/** Replaces every secret (hex case ignored) with `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.replace(new RegExp(secret.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi"), "[redacted]");
  return out;
}
