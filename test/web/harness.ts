/**
 * The web app in a real browser (issue 28): Debian's `chromium` driven by playwright-core (no browser download), a
 * test stack serving the built app on its own port (the URL its sign-in messages name), and an EIP-1193 wallet
 * injected into every page that signs and sends with a real local Hardhat key, so the page cannot tell it from a
 * browser wallet. Screenshots go to test/web/screenshots/ (git-ignored); `checkAccessibility` runs axe-core.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { getBytes, isHexString, JsonRpcProvider, Wallet, type TransactionRequest } from "ethers";
import { WEB_DIST, webBuilt } from "../../server/web";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const SCREENSHOTS = path.join(__dirname, "screenshots");
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

/** A free port of this suite's range on 127.0.0.1 (41000-41099), for a stack whose public URL must name its port. */
export async function freePort(from = 41000, to = 41099): Promise<number> {
  for (let port = from; port <= to; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port on 127.0.0.1 between ${from} and ${to}`);
}

/** The browser, headless; one per test file (pages and contexts are cheap, the browser is not). */
export async function launchBrowser(): Promise<Browser> {
  if (!webBuilt()) throw new Error(`the web app is not built (${WEB_DIST}): run npm run build`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in CI containers has no user namespace for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

export interface InjectedWallet {
  /** The wallet's key (a Hardhat account's). */
  privateKey: string;
  /** JSON-RPC of the chain the wallet sends to. */
  rpcUrl: string;
  chainId: number;
}

/**
 * The page's `window.ethereum` (EIP-1193: `request`, `on`, `removeListener`), run before any script of the page: each
 * request goes to the exposed binding, and its refusals are errors with the wallet's numeric `code`.
 */
const INJECTED_PROVIDER = `(() => {
  const call = window.__marketTestWallet;
  const listeners = new Map();
  window.ethereum = {
    async request({ method, params }) {
      const { result, error } = await call(method, params ?? []);
      if (error) throw Object.assign(new Error(error.message), { code: error.code });
      return result;
    },
    on(event, listener) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(listener);
    },
    removeListener(event, listener) {
      listeners.get(event)?.delete(listener);
    },
  };
})();`;

/** What the page's `window.ethereum.request` asked, in order (tests check what was signed or sent). */
export interface WalletLog {
  requests: Array<{ method: string; params: unknown }>;
  /**
   * Methods whose next request the person declines (the prompt closed or "Reject" pressed): answered with EIP-1193's
   * 4001 and nothing signed or sent. Each entry is used once.
   */
  decline: string[];
}

/**
 * A browser context whose pages have `window.ethereum`: requests go to this process, which answers accounts and the
 * chain id, signs personal_sign messages and sends transactions with the key, and forwards reads to the chain.
 */
export async function walletContext(
  browser: Browser,
  wallet?: InjectedWallet,
  /** Awaited after each transaction the wallet sent, before the page hears its hash (a test may reload the page meanwhile). */
  afterSend?: (txHash: string, sent: number) => Promise<void>,
): Promise<{ context: BrowserContext; log: WalletLog }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const log: WalletLog = { requests: [], decline: [] };
  if (!wallet) return { context, log };
  // No response cache: consecutive transactions must see the nonce the previous one used.
  const provider = new JsonRpcProvider(wallet.rpcUrl, wallet.chainId, { staticNetwork: true, cacheTimeout: -1 });
  const signer = new Wallet(wallet.privateKey, provider);
  context.on("close", () => provider.destroy());
  await context.exposeBinding("__marketTestWallet", async (_source, method: string, params: unknown[]) => {
    log.requests.push({ method, params });
    const declined = log.decline.indexOf(method);
    if (declined >= 0) {
      log.decline.splice(declined, 1);
      return { error: { code: 4001, message: "User rejected the request." } };
    }
    try {
      const result = await answer(signer, provider, wallet.chainId, method, params ?? []);
      if (method === "eth_sendTransaction") await afterSend?.(result as string, log.requests.filter((r) => r.method === method).length);
      return { result };
    } catch (error) {
      const e = error as { code?: unknown; message?: string };
      return { error: { code: typeof e.code === "number" ? e.code : -32603, message: e.message ?? String(error) } };
    }
  });
  await context.addInitScript(INJECTED_PROVIDER);
  return { context, log };
}

async function answer(signer: Wallet, provider: JsonRpcProvider, chainId: number, method: string, params: unknown[]): Promise<unknown> {
  switch (method) {
    case "eth_requestAccounts":
    case "eth_accounts":
      return [signer.address];
    case "eth_chainId":
      return `0x${chainId.toString(16)}`;
    case "net_version":
      return String(chainId);
    case "personal_sign": {
      const [data, address] = params as [string, string];
      if (address.toLowerCase() !== signer.address.toLowerCase()) throw Object.assign(new Error("unknown account"), { code: 4100 });
      return signer.signMessage(isHexString(data) ? getBytes(data) : data);
    }
    case "eth_sendTransaction": {
      const [tx] = params as [{ from?: string; to?: string; data?: string; value?: string; gas?: string; nonce?: string }];
      if (tx.from && tx.from.toLowerCase() !== signer.address.toLowerCase()) throw Object.assign(new Error("unknown account"), { code: 4100 });
      const request: TransactionRequest = { to: tx.to, data: tx.data, ...(tx.value ? { value: BigInt(tx.value) } : {}) };
      if (tx.gas) request.gasLimit = BigInt(tx.gas);
      // The nonce the page asks for (the posting engine journals it before sending), as a browser wallet honours it.
      if (tx.nonce) request.nonce = Number(tx.nonce);
      const sent = await signer.sendTransaction(request);
      return sent.hash;
    }
    case "wallet_switchEthereumChain": {
      const [{ chainId: wanted }] = params as [{ chainId: string }];
      if (Number(wanted) !== chainId) throw Object.assign(new Error(`this wallet is on chain ${chainId} only`), { code: 4902 });
      return null;
    }
    default:
      return provider.send(method, params);
  }
}

/** Saves a full-page screenshot as test/web/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/**
 * axe-core's check of the page as it stands (WCAG 2 A and AA rules); answers the serious and critical violations.
 * The script is evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
 */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const page = globalThis as unknown as {
      document: unknown;
      axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> };
    };
    const result = await page.axe.run(page.document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** Fails with the list of the page's messages when the console reported an error or a CSP refusal. */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));
  return errors;
}
