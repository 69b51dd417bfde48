import type { Http } from "../http";
import type { ChainWallet, Settlement } from "../chain";

/** What every phase of posting works with: the API, the posting chain as the service reports it, and the wallet. */
export interface PostingContext {
  http: Http;
  settlement: Settlement;
  chain: ChainWallet;
}
