/**
 * The escrow's rules, written once (contracts/TaskEscrow.sol is the authority): its enums, its events as one typed
 * union read through one decoder, the fold of those events into a task and the escrow-wide state, and the
 * preconditions of every task call. The server, the indexer, the SDK and the CLI read the escrow through this module.
 */
export * from "./enums";
export * from "./events";
export * from "./task";
export * from "./rules";
export * from "./calldata";
