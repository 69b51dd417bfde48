/** An open run of the journaled engine (run.ts opens it; claims.ts, post.ts and repeats.ts read it). */
import type { MarketClient } from "../../client";
import type { ChainWallet } from "../../chain";
import type { JournalBinding } from "./entries";
import type { JournalWriter } from "./journal";
import type { Outcomes } from "./outcomes";
import type { FundedIndex, Reporter } from "./ports";
import type { RunRow } from "./rows";

export interface Run {
  /** Names the rows' source in messages (the task file's path; a call's name). */
  file: string;
  rows: RunRow[];
  client: MarketClient;
  chain: ChainWallet;
  binding: JournalBinding;
  journal: JournalWriter;
  results: Outcomes;
  /** Rows this wallet funded from any run (a copied file pays nothing twice unknowingly). */
  funded: FundedIndex;
  /** Keys of rows the journal says were posted, paid on chain, that the service does not list (listed again). */
  notListed: ReadonlySet<string>;
  reporter: Reporter;
  close(): Promise<void>;
}
