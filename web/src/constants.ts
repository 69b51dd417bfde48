/** Lists the pages offer, from core/ (the one place they are defined). */
export { CAPABILITY_TAGS as CAPABILITIES } from "../../core/capabilities";
export { CHAIN_NAMES as CHAINS } from "../../core/chains";
