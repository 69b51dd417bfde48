import type { Migration } from "kysely";
import * as initial from "./2026-11-21T00-00-00_initial";
import * as lifecycle from "./2026-11-21T12-00-00_lifecycle";
import * as browseIndexes from "./2026-11-21T13-30-00_browse-indexes";
import * as escrowTaskAssignedBy from "./2026-11-22T00-00-00_escrow-task-assigned-by";
import * as hostedAgents from "./2026-11-23T00-00-00_hosted-agents";
import * as identityReputation from "./2026-11-23T01-00-00_identity-reputation";
import * as mcpQuotes from "./2026-11-23T04-00-00_mcp-quotes";
import * as hardening from "./2026-11-24T00-00-00_hardening";
import * as scaleOut from "./2026-11-24T01-00-00_scale-out";
import * as services from "./2026-11-24T11-00-00_services";
import * as browseAtScale from "./2026-11-25T00-00-00_browse-at-scale";
import * as hostedSubtasks from "./2026-11-26T00-00-00_hosted-subtasks";
import * as hostedMcpRuns from "./2026-11-26T12-00-00_hosted-mcp-runs";
import * as skills from "./2026-11-27T00-00-00_skills";
import * as sandboxUsage from "./2026-11-27T12-00-00_sandbox-usage";
import * as eventLog from "./2026-11-27T13-00-00_event-log";
import * as webhooks from "./2026-11-27T13-30-00_webhooks";
import * as skillStats from "./2026-11-28T00-00-00_skill-stats";
import * as listingAmount from "./2026-11-28T01-00-00_listing-amount";
import * as browseChanges from "./2026-11-28T02-30-00_browse-changes";

/** Every migration, keyed by its timestamped name; Kysely runs them in name order. */
export const migrations: Record<string, Migration> = {
  "2026-11-21T00-00-00_initial": initial,
  "2026-11-21T12-00-00_lifecycle": lifecycle,
  "2026-11-21T13-30-00_browse-indexes": browseIndexes,
  "2026-11-22T00-00-00_escrow-task-assigned-by": escrowTaskAssignedBy,
  "2026-11-23T00-00-00_hosted-agents": hostedAgents,
  "2026-11-23T01-00-00_identity-reputation": identityReputation,
  "2026-11-23T04-00-00_mcp-quotes": mcpQuotes,
  "2026-11-24T00-00-00_hardening": hardening,
  "2026-11-24T01-00-00_scale-out": scaleOut,
  "2026-11-24T11-00-00_services": services,
  "2026-11-25T00-00-00_browse-at-scale": browseAtScale,
  "2026-11-26T00-00-00_hosted-subtasks": hostedSubtasks,
  "2026-11-26T12-00-00_hosted-mcp-runs": hostedMcpRuns,
  "2026-11-27T00-00-00_skills": skills,
  "2026-11-27T12-00-00_sandbox-usage": sandboxUsage,
  "2026-11-27T13-00-00_event-log": eventLog,
  "2026-11-27T13-30-00_webhooks": webhooks,
  "2026-11-28T00-00-00_skill-stats": skillStats,
  "2026-11-28T01-00-00_listing-amount": listingAmount,
  "2026-11-28T02-30-00_browse-changes": browseChanges,
};
