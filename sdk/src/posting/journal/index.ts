/**
 * The journaled posting engine: a resumable run over checked rows that never pays for a row twice, whatever stops it.
 * Hosts plug in where the journal lives and how things are said (ports.ts): the CLI (files), the API server (its
 * database), any other (a browser's storage) without a change here. docs/sdk.md "The journaled posting engine".
 */
export * from "./entries";
export { openJournal, type JournalWriter } from "./journal";
export * from "./ports";
export { callRows, contentHash, inputOf, keyedRows, type RunRow } from "./rows";
export { createOutcomes, outcomesCsv, RESULT_COLUMNS, RowStatus, type Outcomes, type RowOutcome } from "./outcomes";
export { checkJournalOwner, reconcile, type Reconciled, type ReconcileOptions } from "./reconcile";
export { bindingOf, checkClaims, eachLimited } from "./claims";
export { findRepeats, type Repeat } from "./repeats";
export { finalRows, finishRows, fundingInFlight, openRun, outcomeOf, PENDING_FUNDING_WAIT_MS, sortRows, type RunSetup, type Sorted } from "./run";
export { postFresh, type PostFreshOptions, type PostTasksHooks } from "./post";
export { LISTED_ALREADY, listedAlready, preflight, refuseListed, requirePostable, requireRecipients, setAsideListed } from "./preflight";
export { callFingerprint, callId, callPoster, type CallPosterOptions, type CallStore } from "./call";
export { totalsOf, type Totals } from "./totals";
export type { Run } from "./types";
