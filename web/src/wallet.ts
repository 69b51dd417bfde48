/**
 * The injected wallet (EIP-1193, `window.ethereum`: MetaMask, Rabby, a test page's own) through viem. The app asks it
 * for an account and a signature of the service's sign-in message; the key never leaves the wallet.
 */
import { createWalletClient, custom, getAddress, type EIP1193Provider, type WalletClient } from "viem";
import { parseSiweMessage } from "viem/siwe";
import { api } from "./api";
import type { Session } from "@market/core/api";

declare global {
  interface Window {
    ethereum?: EIP1193Provider;
  }
}

/** A refusal of the wallet step, with a code like the API's (shown the same way). */
export class WalletError extends Error {
  constructor(
    readonly code: "NO_WALLET" | "WALLET_REFUSED" | "SIGN_IN_MESSAGE_INVALID",
    message: string,
  ) {
    super(message);
  }
}

export function walletClient(): WalletClient {
  if (!window.ethereum) throw new WalletError("NO_WALLET", "No browser wallet was found: install one (MetaMask, Rabby…) and reload.");
  return createWalletClient({ transport: custom(window.ethereum) });
}

/** The wallet's first account, asking the person to connect when needed. */
export async function connectWallet(): Promise<`0x${string}`> {
  const client = walletClient();
  try {
    const [address] = await client.requestAddresses();
    if (!address) throw new WalletError("WALLET_REFUSED", "The wallet gave no account.");
    return getAddress(address);
  } catch (error) {
    if (error instanceof WalletError) throw error;
    throw new WalletError("WALLET_REFUSED", `The wallet refused to connect: ${(error as Error).message}`);
  }
}

/**
 * Signs in (the API's EIP-4361 flow, as the SDK's `signIn`): a nonce and its message from the API, checked to be a
 * sign-in for this wallet on this site before anything is signed, signed by the wallet, exchanged for a session.
 */
export async function signInWithWallet(): Promise<Session> {
  const address = await connectWallet();
  const { message } = await api.nonce(address);
  const parsed = parseSiweMessage(message);
  if (!parsed.address || getAddress(parsed.address) !== address || parsed.domain !== window.location.host) {
    throw new WalletError(
      "SIGN_IN_MESSAGE_INVALID",
      `The service asked to sign something other than a sign-in for ${address} on ${window.location.host}; nothing was signed.`,
    );
  }
  let signature: `0x${string}`;
  try {
    signature = await walletClient().signMessage({ account: address, message });
  } catch (error) {
    throw new WalletError("WALLET_REFUSED", `The wallet did not sign: ${(error as Error).message}`);
  }
  return api.verify(message, signature);
}
