/** The columns of a bulk task file (spec: "Bulk row columns"). Names ignore case. */
export const BULK_COLUMNS = [
  "instructions",
  "instructions_file",
  "reward",
  "amount",
  "duration",
  "privacy",
  "verification",
  "zone",
  "routing_summary",
  "capabilities",
  "target",
  // A rental: the service rented (a hosted agent's fixed-price listing); needs `target` = that service's agent.
  "service_id",
  // `auto` verification's rules, checked like the API's verificationCriteria (without them: min_length 10 at 60%).
  "verification_min_length",
  "verification_keywords",
  "verification_regex",
  "pass_threshold",
  // The chain the row is posted on (`arc`, `0g`...); empty: the run's chain (the CLI's --chain, else the first postable).
  "chain",
] as const;

export type BulkColumn = (typeof BULK_COLUMNS)[number];

/** `instructions_file` exists only where files can be read (the CLI), i.e. when a `readFile` is supplied. */
export function knownColumns(withInstructionsFile: boolean): ReadonlySet<string> {
  return new Set(BULK_COLUMNS.filter((column) => withInstructionsFile || column !== "instructions_file"));
}

export function columnKey(name: string): string {
  return name.trim().toLowerCase();
}
