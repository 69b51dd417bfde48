/**
 * @market/sdk in a web page: the client, the journaled posting engine with its browser journal (IndexedDB, Web Locks)
 * and a browser wallet (EIP-1193) in place of a private key. The web app's bulk page imports this entry only.
 */
export { MarketClient, type MarketClientOptions } from "./client";
export { ApiError, type ApiErrorBody, type RowError } from "./errors";
export { connectInjected, injectedAccount, type Eip1193Provider, type InjectedWallet } from "./injected";
export * from "./posting/journal";
export {
  browserJournal,
  browserRuns,
  forgetBrowserRun,
  markBrowserRunFinished,
  openJournalDb,
  BROWSER_JOURNAL_DB,
  type BrowserJournalOptions,
  type BrowserRunInfo,
} from "./posting/journal/browser";
export type { PostTaskInput, PostTasksResult } from "./posting";
