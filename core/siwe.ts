import { getAddress, isAddress } from "ethers";

/** The fields of an EIP-4361 (Sign-In with Ethereum) message this service issues and accepts. */
export interface SignInMessage {
  domain: string;
  address: string;
  statement?: string;
  uri: string;
  version: "1";
  chainId: number;
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
}

/** Formats a message exactly as EIP-4361 lays it out; the wallet signs this text (personal_sign). */
export function formatSignInMessage(m: SignInMessage): string {
  const lines = [`${m.domain} wants you to sign in with your Ethereum account:`, m.address, ""];
  if (m.statement) lines.push(m.statement, "");
  lines.push(`URI: ${m.uri}`, `Version: ${m.version}`, `Chain ID: ${m.chainId}`, `Nonce: ${m.nonce}`, `Issued At: ${m.issuedAt}`);
  if (m.expirationTime) lines.push(`Expiration Time: ${m.expirationTime}`);
  return lines.join("\n");
}

/** Parses a message in the layout above; undefined when any part is missing or malformed. */
export function parseSignInMessage(text: string): SignInMessage | undefined {
  const lines = text.split("\n");
  const header = /^(\S+) wants you to sign in with your Ethereum account:$/.exec(lines[0] ?? "");
  const address = lines[1] ?? "";
  if (!header?.[1] || !isAddress(address) || lines[2] !== "") return undefined;
  let i = 3;
  let statement: string | undefined;
  if (lines[i] !== undefined && !lines[i]!.startsWith("URI: ")) {
    statement = lines[i];
    if (lines[i + 1] !== "") return undefined;
    i += 2;
  }
  const fields = new Map<string, string>();
  for (; i < lines.length; i++) {
    const match = /^([A-Za-z ]+): (.*)$/.exec(lines[i]!);
    if (!match?.[1] || match[2] === undefined || fields.has(match[1])) return undefined;
    fields.set(match[1], match[2]);
  }
  const chainId = Number(fields.get("Chain ID"));
  const nonce = fields.get("Nonce");
  const uri = fields.get("URI");
  const issuedAt = fields.get("Issued At");
  if (fields.get("Version") !== "1" || !Number.isSafeInteger(chainId) || !nonce || !/^[A-Za-z0-9]{8,64}$/.test(nonce)) return undefined;
  if (!uri || !issuedAt || Number.isNaN(Date.parse(issuedAt))) return undefined;
  const expirationTime = fields.get("Expiration Time");
  if (expirationTime !== undefined && Number.isNaN(Date.parse(expirationTime))) return undefined;
  const known = new Set(["URI", "Version", "Chain ID", "Nonce", "Issued At", "Expiration Time"]);
  for (const key of fields.keys()) if (!known.has(key)) return undefined;
  return {
    domain: header[1],
    address: getAddress(address),
    ...(statement === undefined ? {} : { statement }),
    uri,
    version: "1",
    chainId,
    nonce,
    issuedAt,
    ...(expirationTime === undefined ? {} : { expirationTime }),
  };
}
