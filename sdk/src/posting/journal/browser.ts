/**
 * The engine's journal in a web browser (ports.ts `JournalPort`): a run's entries in IndexedDB, appended in one
 * transaction per call that resolves only once the transaction has committed (durability "strict": on disk, not only
 * in the page's memory), and the run's lock a Web Locks API lock named after the run, so two tabs of the same origin
 * never post the same run at once (`RUN_IN_PROGRESS`). A closed tab releases its lock; its entries stay, and the same
 * file opened again resumes from them (the web app's bulk page names a run after its file's content and the wallet).
 * Loads no Node-only module; the engine around it is the CLI's and the server's.
 */
import { clientError } from "../../errors";
import type { JournalEntry } from "./entries";
import type { JournalPort } from "./ports";

/** The IndexedDB database that holds every run's journal of this origin. */
export const BROWSER_JOURNAL_DB = "market-posting";
const ENTRIES = "entries";
const RUNS = "runs";

/** What the browser remembers of a run beside its entries (to list unfinished runs). */
export interface BrowserRunInfo {
  run: string;
  /** The file's name as the person dropped it. */
  file: string;
  rows: number;
  wallet: string;
  startedAt: string;
  /** Set once every row is posted or can never be: the journal stays (the same file dropped again pays nothing). */
  finishedAt?: string;
}

type StoredEntry = { run: string; seq: number; entry: JournalEntry };

/*
 * The few IndexedDB and Web Locks shapes used here, written out: the SDK compiles without the DOM library (its Node
 * types would clash with the DOM's), and a page passes the browser's own objects, which have these shapes.
 */
interface IDBRequest<T> {
  result: T;
  error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface IDBOpenDBRequest extends IDBRequest<IDBDatabase> {
  onupgradeneeded: (() => void) | null;
}
interface IDBObjectStore {
  getAll(query?: unknown): IDBRequest<unknown[]>;
  get(key: unknown): IDBRequest<unknown>;
  add(value: unknown): unknown;
  put(value: unknown): unknown;
  delete(query: unknown): unknown;
}
interface IDBTransaction {
  objectStore(name: string): IDBObjectStore;
  error: unknown;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}
export interface IDBDatabase {
  transaction(stores: string | string[], mode: "readonly" | "readwrite", options?: { durability?: "strict" | "relaxed" | "default" }): IDBTransaction;
  createObjectStore(name: string, options: { keyPath: string | string[] }): unknown;
  close(): void;
}
export interface IDBFactory {
  open(name: string, version: number): IDBOpenDBRequest;
}
interface IDBKeyRangeStatic {
  bound(lower: unknown, upper: unknown): unknown;
}
export interface LockManager {
  request(name: string, options: { ifAvailable: boolean }, callback: (lock: unknown) => Promise<void> | void): Promise<unknown>;
}
/** The page's globals: IndexedDB and the Web Locks API. */
const browser = globalThis as unknown as { indexedDB: IDBFactory; IDBKeyRange: IDBKeyRangeStatic; navigator: { locks: LockManager } };

const request = <T>(req: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error("IndexedDB request failed"));
  });

const committed = (tx: IDBTransaction) =>
  new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error("IndexedDB transaction failed"));
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
  });

/** Opens (creating on first use) the journal database. */
export function openJournalDb(name = BROWSER_JOURNAL_DB, factory: IDBFactory = browser.indexedDB): Promise<IDBDatabase> {
  const open = factory.open(name, 1);
  open.onupgradeneeded = () => {
    const db = open.result;
    db.createObjectStore(ENTRIES, { keyPath: ["run", "seq"] });
    db.createObjectStore(RUNS, { keyPath: "run" });
  };
  return request(open);
}

const range = (run: string) => browser.IDBKeyRange.bound([run, 0], [run, Number.MAX_SAFE_INTEGER]);

export interface BrowserJournalOptions {
  /** The run's name: the same file posted again by the same wallet resumes the same run. */
  run: string;
  db: IDBDatabase;
  /** The run's description, stored with its first entry. */
  info?: Omit<BrowserRunInfo, "run">;
  /** The Web Locks API (default `navigator.locks`). */
  locks?: LockManager;
}

/** A run's journal in IndexedDB, locked with the Web Locks API. */
export function browserJournal(options: BrowserJournalOptions): JournalPort {
  const { run, db } = options;
  const locks = options.locks ?? browser.navigator.locks;
  let next: number | undefined;
  const readAll = async () => {
    const tx = db.transaction(ENTRIES, "readonly");
    return (await request(tx.objectStore(ENTRIES).getAll(range(run)))) as StoredEntry[];
  };
  return {
    name: `the saved run of ${options.info?.file ?? run} in this browser`,
    lock() {
      return new Promise((resolve, reject) => {
        locks
          .request(`market-post-run:${run}`, { ifAvailable: true }, async (lock) => {
            if (!lock) {
              reject(clientError("RUN_IN_PROGRESS", "This run is being posted in another tab or window of this browser; wait for it to end there."));
              return;
            }
            // Held until the engine releases it (or the tab closes: the browser releases it then).
            await new Promise<void>((release) => resolve(release));
          })
          .catch(reject);
      });
    },
    async read() {
      const stored = await readAll();
      stored.sort((a, b) => a.seq - b.seq);
      next = (stored.at(-1)?.seq ?? -1) + 1;
      return stored.map((s) => s.entry);
    },
    async append(entries) {
      next ??= (await readAll()).reduce((max, s) => Math.max(max, s.seq), -1) + 1;
      const tx = db.transaction([ENTRIES, RUNS], "readwrite", { durability: "strict" });
      const done = committed(tx);
      const store = tx.objectStore(ENTRIES);
      let seq = next;
      for (const entry of entries) store.add({ run, seq: seq++, entry } satisfies StoredEntry);
      if (options.info && next === 0) tx.objectStore(RUNS).put({ run, ...options.info } satisfies BrowserRunInfo);
      await done;
      next = seq;
    },
  };
}

/** The runs this browser holds a journal for (the bulk page lists those it can finish). */
export async function browserRuns(db: IDBDatabase): Promise<BrowserRunInfo[]> {
  return (await request(db.transaction(RUNS, "readonly").objectStore(RUNS).getAll())) as BrowserRunInfo[];
}

/** Records that a run has nothing left to finish (its journal stays, so the same file posts nothing twice). */
export async function markBrowserRunFinished(db: IDBDatabase, run: string): Promise<void> {
  const tx = db.transaction(RUNS, "readwrite");
  const done = committed(tx);
  const store = tx.objectStore(RUNS);
  const info = (await request(store.get(run))) as BrowserRunInfo | undefined;
  if (info) store.put({ ...info, finishedAt: new Date().toISOString() } satisfies BrowserRunInfo);
  await done;
}

/** Forgets a run's journal (once every row is posted, or at the person's word): its entries and its description. */
export async function forgetBrowserRun(db: IDBDatabase, run: string): Promise<void> {
  const tx = db.transaction([ENTRIES, RUNS], "readwrite");
  const done = committed(tx);
  tx.objectStore(ENTRIES).delete(range(run));
  tx.objectStore(RUNS).delete(run);
  await done;
}
