import type { Http } from "../http";
import type { ChainWallet, Settlement } from "../chain";
import type { BriefSealer } from "./seal";

/**
 * What every phase of posting works with: the API, the posting chain as the service reports it, the wallet, and what
 * seals private briefs (seal.ts).
 */
export interface PostingContext {
  http: Http;
  settlement: Settlement;
  chain: ChainWallet;
  sealer: BriefSealer;
}
