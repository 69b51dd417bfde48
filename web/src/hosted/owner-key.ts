/**
 * The owner key of hosted agents deployed from the web app. A deploy names an owner public key: every secret of the
 * agent (its wallet key first) gets an ECIES copy to it, which only the owner can open (docs/hosted-agents.md
 * "Custody"). The CLI and the SDK use the wallet's own key; a browser wallet never gives its key out, so the page
 * derives one from the wallet's signature of a fixed message naming this site and the account: the same wallet
 * signs the same message to the same signature (RFC 6979), so the key is found again whenever the owner asks, and is
 * never stored. It lives in the page only while a deploy or an export needs it.
 */
import { getAddress, hexToBigInt, keccak256, toHex, type Hex } from "viem";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { WalletError, walletClient } from "../wallet";

/** The order of secp256k1: a private key is in [1, n - 1]. */
const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** What the wallet is asked to sign: it names this site, so the prompt says where the key is for. */
export function ownerKeyMessage(host: string, address: string): string {
  return [
    `${host} asks for your hosted agents' owner key.`,
    "",
    `Signing this message gives ${host} the key that opens the wallet keys and secrets of the hosted agents you deploy on it.`,
    "Sign it only on this site. It sends no transaction and costs nothing.",
    "",
    `Account: ${getAddress(address)}`,
    "Purpose: market hosted-agent owner key, version 1",
  ].join("\n");
}

/** The owner key of `address` on this site: a signature by the wallet, hashed to a secp256k1 private key. */
export async function deriveOwnerKey(address: string): Promise<{ privateKey: Hex; publicKey: string }> {
  let signature: Hex;
  try {
    signature = await walletClient().signMessage({ account: getAddress(address), message: ownerKeyMessage(window.location.host, address) });
  } catch (error) {
    if (error instanceof WalletError) throw error;
    throw new WalletError("WALLET_REFUSED", `The wallet did not sign the owner key message: ${(error as Error).message}`);
  }
  let seed = keccak256(signature);
  // A hash outside [1, n - 1] (odds about 2^-128) is hashed again.
  while (hexToBigInt(seed) === 0n || hexToBigInt(seed) >= CURVE_ORDER) seed = keccak256(seed);
  const privateKey = toHex(hexToBigInt(seed), { size: 32 });
  return { privateKey, publicKey: publicKeyFromPrivateKey(privateKey) };
}
