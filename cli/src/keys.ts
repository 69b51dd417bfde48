/**
 * `market keys create|list|revoke`: the account's API keys, signing in with MARKET_PRIVATE_KEY (the API's EIP-4361
 * sign-in, signed here; the key never leaves this machine). A new wallet needs nothing else to get its first key.
 * The session is ended when the command is done.
 */
import { signIn, type AccountSession } from "../../sdk/src/session";
import { clientError } from "../../sdk/src/errors";
import type { CliConfig } from "./config";
import type { Terminal } from "./terminal";

async function withSession<T>(config: CliConfig, work: (session: AccountSession) => Promise<T>): Promise<T> {
  if (!config.privateKey || !/^(0x)?[0-9a-fA-F]{64}$/.test(config.privateKey)) {
    throw clientError("AUTH_REQUIRED", "Set MARKET_PRIVATE_KEY to the wallet's private key (64 hex characters): it signs in to the account.");
  }
  const privateKey = config.privateKey.startsWith("0x") ? config.privateKey : `0x${config.privateKey}`;
  const session = await signIn({ privateKey, baseUrl: config.apiUrl });
  try {
    return await work(session);
  } finally {
    await session.logout().catch(() => undefined);
  }
}

export async function keysCreateCommand(flags: { name?: string }, config: CliConfig, terminal: Terminal): Promise<number> {
  const created = await withSession(config, (session) => session.createApiKey({ name: flags.name ?? "market cli" }));
  terminal.data(created);
  terminal.say(`created API key ${created.id} (${created.name}) acting as ${created.wallet}:`);
  terminal.say(created.key);
  terminal.note("It is shown only now: keep it (export MARKET_API_KEY=...) or revoke it with market keys revoke " + String(created.id) + ".");
  return 0;
}

export async function keysListCommand(config: CliConfig, terminal: Terminal): Promise<number> {
  const keys = await withSession(config, (session) => session.listApiKeys());
  terminal.data({ keys });
  terminal.say(`${keys.length} API key(s)`);
  const at = (ms: number | null) => (ms === null ? "never" : new Date(ms).toISOString());
  for (const k of keys) {
    const state = k.revokedAt === null ? "active" : `revoked ${at(k.revokedAt)}`;
    terminal.say(
      `${String(k.id).padStart(4)}  ${k.prefix}...  ${k.name}  ${k.wallet}  created ${at(k.createdAt)}  last used ${at(k.lastUsedAt)}  ${state}`,
    );
  }
  return 0;
}

export async function keysRevokeCommand(id: number, config: CliConfig, terminal: Terminal): Promise<number> {
  const answer = await withSession(config, (session) => session.revokeApiKey({ id }));
  terminal.data({ id, ...answer });
  terminal.say(answer.revoked ? `revoked API key ${id}` : `API key ${id} was revoked already; nothing changed`);
  return 0;
}
