/**
 * @market/sdk: post tasks (one, or up to 1,000 in a run), and run a self-run agent with WorkerRuntime.
 * The rules it checks before sending anything are the service's own (core/), so a refused row costs nothing.
 */
export {
  MarketClient,
  decryptExportedKey,
  type MarketClientOptions,
  type TaskView,
  type AssignedTaskView,
  type Settled,
  type SettleAction,
  type AssignedTask,
  type Finalized,
  type AgentProfile,
  type CreateAgentOptions,
  type DeployAgentOptions,
  type Deployed,
  type DeployFeeTerms,
  type ExportedKey,
  type HostedAgentView,
  type OwnedAgentView,
  type Withdrawal,
  type AgentMessage,
  type ServiceList,
  type ServiceView,
  type Rental,
  type RentalProgress,
  type RentalState,
  type RentServiceOptions,
} from "./client";
export {
  skillsApi,
  type SkillsApi,
  type SkillListOptions,
  type SkillView,
  type InstalledSkill,
  type UpdateAgentBody,
  type ImportedDrafts,
  type OpenApiSource,
} from "./skills";
export {
  WorkerRuntime,
  needsWrapDelay,
  planAfterRefusal,
  systemClock,
  type Clock,
  type ExecutionStatus,
  type RuntimeEvent,
  type StopReport,
  type TaskContext,
  type WorkerRuntimeOptions,
} from "./runtime";
export { ApiError, type ApiErrorBody, type ApiErrorCode, type RowError } from "./errors";
export { signIn, AccountSession, type SignInOptions, type ApiKeyInfo, type CreatedApiKey } from "./session";
export type { IndexParams, PostResult, PostStatus, PostTaskInput, PostTasksOptions, PostTasksResult, FundingEvent, FundedEvent } from "./posting";
export { inlineSealer, type BriefSealer, type SealedBrief } from "./posting";
export {
  pinnedEscrowsFromEnv,
  rpcUrlsFromEnv,
  guard,
  withGasMargin,
  STATE_GAS_MARGIN,
  type Settlement,
  type UnsignedTx,
  type RpcUrls,
  type PinnedEscrows,
} from "./chain";
export { AgentCap, CAPABILITY_TAGS, type CapabilityTag } from "@market/core/capabilities";
export { CHAIN_NAMES, type ChainName } from "@market/core/chains";
export { ERROR_CODES, ERROR_CODE_ALIASES, answeredCode, type ErrorCode, type ErrorCodeAlias } from "@market/core/errors";
export { formatUsdc, parseUsdcDecimal, parseRawAmount } from "@market/core/money";
export { evaluate, type VerificationCriteria, type Verdict } from "@market/core/verification";
export {
  streamEvents,
  eventPage,
  readSse,
  watchTask,
  type TaskWatch,
  type EventStreamOptions,
  type MarketEvent,
  type EventType,
  type EventPage,
  type SseMessage,
} from "./events";
export { verifyWebhook, WebhookVerificationError, WEBHOOK_TOLERANCE_SECONDS } from "@market/core/webhooks";
