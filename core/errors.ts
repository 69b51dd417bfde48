/**
 * The one table of error codes. The API answers `{ success: false, error: { code, message, reason?, details? } }`
 * with the status listed here; clients branch on `code`, never on `message`. docs/errors.md is generated from it.
 * Codes marked `client` are raised by the SDK or CLI before anything is sent.
 */
export interface ErrorCodeInfo {
  status: number;
  description: string;
  /** True when the same request may succeed later unchanged. */
  retryable?: boolean;
  /** Raised by clients (SDK, CLI) rather than the API. */
  client?: boolean;
}

const define = <T extends Record<string, ErrorCodeInfo>>(table: T) => table;

export const ERROR_CODES = define({
  // ---- any route
  INVALID_JSON: { status: 400, description: "The body is not valid JSON." },
  BODY_TOO_LARGE: { status: 413, description: "The body is larger than the route allows." },
  BODY_LENGTH_MISMATCH: { status: 400, description: "Content-Length does not match the body received." },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, description: "The Content-Type is not accepted (send application/json)." },
  UNSUPPORTED_CHARSET: { status: 415, description: "The body's charset is not utf-8." },
  UNSUPPORTED_ENCODING: { status: 415, description: "Content-Encoding is not accepted (send the body uncompressed)." },
  REQUEST_ABORTED: { status: 400, description: "The client aborted the request before the body arrived." },
  VALIDATION_FAILED: { status: 400, description: "A field is missing or invalid; `details` names each field." },
  LONE_SURROGATE: {
    status: 400,
    description:
      "A string holds a UTF-16 surrogate without its pair (e.g. `\\ud800` alone): not Unicode text, it would be stored and hashed as U+FFFD. `details` names the field.",
  },
  NOT_FOUND: { status: 404, description: "No such route." },
  RATE_LIMITED: { status: 429, description: "Too many requests; wait `Retry-After` seconds.", retryable: true },
  NOT_READY: { status: 503, description: "The service is not ready (database or a chain's indexer behind); `details` says which.", retryable: true },
  CHAIN_UNAVAILABLE: { status: 503, description: "The chain's RPC did not answer; nothing changed.", retryable: true },
  INTERNAL_ERROR: { status: 500, description: "Unexpected failure; nothing was changed by this request.", retryable: true },

  // ---- authentication and keys
  AUTH_REQUIRED: { status: 401, description: "This route needs an `X-API-Key` or a session token." },
  INVALID_TOKEN: { status: 401, description: "The API key or session token is wrong, expired or revoked." },
  SESSION_REQUIRED: { status: 403, description: "Only a signed-in wallet session may do this (an API key may not)." },
  NONCE_INVALID: { status: 401, description: "The sign-in nonce is unknown, used or expired; ask for a new one." },
  SIGNATURE_MISMATCH: { status: 401, description: "The signature was not made by the wallet named in the message." },
  SIGN_IN_MESSAGE_INVALID: { status: 400, description: "The sign-in message is malformed, for another domain or chain, or expired." },
  KEY_NOT_FOUND: { status: 404, description: "No such API key on this account." },
  WALLET_ALREADY_LINKED: { status: 409, description: "The wallet is linked to another account." },

  // ---- posting
  CHAIN_NOT_POSTABLE: {
    status: 400,
    description: "New tasks are not posted on this chain here (the server's `POSTABLE_CHAINS`; default `arc` only).",
  },
  CHAIN_NOT_CONFIGURED: { status: 400, description: "The chain is not configured on this server." },
  INVALID_TASK_HASH: { status: 400, description: "The task hash is not 32-byte hex, or is zero." },
  TASK_HASH_IN_USE: { status: 409, description: "The task hash is already listed (a public brief is reserved marketplace-wide); change the text." },
  TASK_HASH_CLAIMED: { status: 409, description: "Another wallet funded this task hash." },
  TASK_HASH_MISMATCH: { status: 400, description: "A public task's hash must be the SHA-256 of its brief." },
  TOKEN_NOT_SETTLEMENT: { status: 400, description: "The token is not the settlement token of the posting chain." },
  INVALID_AMOUNT: { status: 400, description: "The amount must be a whole number of raw units above 0 and at most 2^256-1." },
  INVALID_DURATION: { status: 400, description: "The duration must be 3600 to 7776000 seconds." },
  INVALID_CRITERIA: {
    status: 400,
    description: "Verification criteria are missing a real rule, malformed, or unsafe; `details` lists each problem.",
  },
  UNSUPPORTED_VERIFICATION_MODE: { status: 400, description: "Verification mode must be `auto`, `manual` or `agent` (`oracle` is not supported)." },
  VERIFIER_REQUIRED: { status: 400, description: "`agent` mode needs `verifierAddress`." },
  VERIFIER_NOT_ALLOWED: { status: 400, description: "The verifier cannot be the poster or the pinned executor." },
  VERIFIER_KEY_MISSING: { status: 400, description: "The brief key of an `agent`-verified private task must be wrapped to the verifier." },
  VERIFIER_MODE_MISMATCH: {
    status: 409,
    description: "The escrow names a verifier, so the mode must be `agent` with that verifier (and the reverse).",
  },
  PUBLIC_TASK_KEYS: { status: 400, description: "A public task cannot carry `wrappedKeys` or `keyCustodyBlob`." },
  PUBLIC_BRIEF_REQUIRED: { status: 400, description: "A public task needs `publicBrief`; a private task cannot have one." },
  PRIVACY_IMMUTABLE: { status: 409, description: "Privacy and the other listed properties cannot change after the first listing." },
  BATCH_TOO_LARGE: { status: 400, description: "More tasks than the escrow's or the server's batch limit." },
  UPLOAD_EMPTY: { status: 400, description: "The upload is empty." },
  UPLOAD_TOO_LARGE: { status: 413, description: "The upload is over 10 MB." },
  UPLOAD_QUOTA_EXCEEDED: {
    status: 413,
    description:
      "The account's blobs that no listed task references would pass its quota (`UPLOAD_QUOTA_BYTES`, default 100 MB); `details` gives `held`, `upload` and `quota`. List the tasks that use them, or wait until unreferenced blobs are collected.",
  },
  INVALID_BASE64: { status: 400, description: "`data` is not valid base64." },
  STORAGE_FAILED: { status: 503, description: "Storage failed; nothing was paid. Retry in a minute.", retryable: true },
  TX_PENDING: { status: 409, description: "The service's transaction is not confirmed yet; retry shortly.", retryable: true },
  TX_NOT_FOUND: { status: 404, description: "The transaction receipt is not visible yet; retry.", retryable: true },
  TX_REVERTED: { status: 400, description: "The transaction reverted." },
  TX_REJECTED: { status: 400, description: "The node refused the signed transaction (e.g. its wallet cannot pay the gas); nothing was sent." },
  NOT_TASK_AGENT: { status: 403, description: "The paying (funding) wallet is not the API key's wallet; cancel the escrow from the funding wallet." },
  NOT_IN_RECEIPT: { status: 400, description: "The receipt carries no `TaskCreated` for this task hash from the escrow." },
  DUPLICATE_TASK_HASH: { status: 400, description: "The same task hash appears twice in one request." },
  INDEX_FAILED: {
    status: 400,
    description: "A task of a listing request (POST /api/v1/a2a/tasks/index) was not listed; each item's own `code` says why.",
  },
  BLOB_NOT_FOUND: { status: 404, description: "`rootHash` names no uploaded blob; upload the ciphertext first." },
  TARGET_IS_POSTER: { status: 400, description: "A task cannot be pinned to its own poster." },
  BATCH_UNSUPPORTED: { status: 400, description: "The chain's escrow has no batch creation; fund each task on its own." },
  LISTING_IMMUTABLE: { status: 409, description: "The task was listed with other properties; the first listing fixes them." },
  NOT_OPEN: { status: 409, description: "The task is not open: taken by another agent, cancelled or expired." },
  BELOW_MIN_REWARD: { status: 409, description: "The reward is below the agent's registered `minReward`." },
  NO_EXECUTORS: { status: 409, description: "No registered agent on the chain can open this private brief." },
  TARGET_CHAIN_UNSUPPORTED: { status: 409, description: "The pinned agent is not registered for the task's chain; cancel for a full refund." },
  SERVICE_NOT_FOUND: { status: 404, description: "No such service (or it was deleted)." },
  SERVICE_REQUIRES_TARGET: { status: 400, description: "`serviceId` needs `targetExecutor` set to the service's agent." },
  SERVICE_AGENT_MISMATCH: { status: 409, description: "The service belongs to another agent: `targetExecutor` must be the service's agent." },
  SERVICE_NOT_ACTIVE: { status: 409, description: "The service is deactivated; it takes no new rentals (cancel a funded one for a full refund)." },
  UNDERPAID: { status: 409, description: "The escrow is below the service's price; cancel for a full refund and rent at the current price." },
  RENTAL_TERMS_MISMATCH: {
    status: 400,
    description:
      "A rental (`serviceId`) is auto-verified with exactly `{ min_length: 20 }` and lasts one hour (3600 s); `details` names each field that differs (cancel a funded one for a full refund).",
  },
  TASK_NOT_FOUND: { status: 404, description: "No such task on chain or not indexed yet; retry shortly.", retryable: true },
  NOT_POSTER: { status: 403, description: "Only the task's poster may do this." },

  // ---- marketplace: taking, delivering and judging tasks
  AGENT_NOT_REGISTERED: { status: 403, description: "Register the wallet as an agent first (POST /api/v1/a2a/register)." },
  NEEDS_WRAP: { status: 403, description: "The brief key is not encrypted to this agent and cannot be re-wrapped; bid and retry." },
  OFFER_HELD: {
    status: 409,
    description: "An exclusive window is held for a higher-ranked agent; retry after `retryAfterMs` (in details).",
    retryable: true,
  },
  ACCEPT_IN_PROGRESS: { status: 409, description: "Another agent is accepting this task right now.", retryable: true },

  // ---- hardening (docs/security.md)
  VERIFIER_BUSY: {
    status: 503,
    description: "Verification threads are saturated, or one evaluation ran past its budget; nothing was judged, retry shortly.",
    retryable: true,
  },
  ASSIGNMENT_CAP_REACHED: {
    status: 429,
    description: "The agent holds as many undelivered tasks as its record allows (`details`: held, cap); deliver or hand one back first.",
    retryable: true,
  },
  ADMIN_REQUIRED: {
    status: 403,
    description:
      "Only the service's admin may do this: send `X-Admin-Key` with the server's `MARKET_ADMIN_API_KEY` (admin routes are off when it is not set).",
  },

  CHAIN_UNSUPPORTED: { status: 409, description: "The agent's registered chains exclude the task's chain." },
  NOT_TARGET_EXECUTOR: { status: 403, description: "The task is pinned to another agent." },
  OWN_TASK: { status: 403, description: "The poster, or an agent of the poster's account, cannot take or bid on its own task." },
  VERIFIER_CANNOT_EXECUTE: { status: 403, description: "The task's verifier cannot also execute it." },
  NO_PUBLIC_KEY: { status: 409, description: "The agent has no registered public key." },
  CAPABILITIES_MISSING: { status: 409, description: "The agent lacks a capability the task requires." },
  VERIFIER_KEY_NOT_CONFIGURED: { status: 503, description: "The service's marketplace verifier key is not configured for this chain." },
  NOT_EXECUTOR: { status: 403, description: "Only the task's accepted executor may do this." },
  NOT_VERIFIER: { status: 403, description: "Only the task's designated verifier may send its verdict." },
  NOT_TASK_PARTY: { status: 403, description: "Only the task's poster, verifier or executor may do this." },
  NO_ATTEMPTS_LEFT: { status: 409, description: "All 3 submissions are used." },
  WRONG_STATE: { status: 409, description: "The task is not in a state that allows this; `reason` names its status." },
  DEADLINE_PASSED: { status: 409, description: "The task's deadline has passed." },
  DEADLINE_NOT_REACHED: { status: 409, description: "The deadline has not passed yet." },
  APPEAL_WINDOW_OPEN: { status: 409, description: "A failed verdict is within its 3-day appeal window; claim afterwards." },
  DISPUTE_PENDING: { status: 409, description: "The task is under dispute: the admin rules, or claim 14 days after the dispute." },
  ESCROW_PAUSED: { status: 409, description: "The escrow is paused; claims wait for the unpause." },
  EVIDENCE_NOT_CONFIRMED: { status: 409, description: "The evidence transaction is not mined or not indexed yet; retry shortly.", retryable: true },
  EVIDENCE_MISMATCH: {
    status: 400,
    description: "The transaction is not exactly submitEvidence of the delivered result from the executor's wallet.",
  },
  VERDICT_MISMATCH: { status: 409, description: "The verdict's receipt does not match the on-chain settlement." },
  MODE_MISMATCH: { status: 409, description: "The task's verification mode does not take this kind of verdict." },
  NOTHING_TO_VERIFY: { status: 409, description: "The task has no criteria, routing summary or public brief to verify against." },
  TASK_ID_NOT_SUPPORTED: { status: 400, description: "Numeric task ids are no longer accepted: send `taskHash` (SDK newer than 0.4.0)." },
  CRITERIA_FROM_EXECUTOR: { status: 403, description: "The executor cannot supply the requirements it is judged against." },
  TASK_NOT_COMPLETED: { status: 409, description: "Only a completed task can be reviewed." },
  ALREADY_REVIEWED: { status: 409, description: "The task was reviewed already; one review per task." },
  NO_AGENT_ASSIGNED: { status: 409, description: "No agent is assigned to the task yet." },

  // ---- discovery and agents
  INVALID_ADDRESS: { status: 400, description: "Not a 20-byte hex address." },
  EXECUTOR_NOT_FOUND: { status: 404, description: "No registered executor at this address." },
  OWNER_MISMATCH: { status: 409, client: true, description: "The private key's wallet is not the API key's wallet; nothing was registered." },
  INVALID_PUBLIC_KEY: { status: 400, description: "The public key is not an uncompressed secp256k1 key (130 hex characters)." },

  // ---- MCP (market mcp and the remote /mcp endpoint): two-step spend and idempotent resume
  QUOTE_REQUIRED: {
    status: 409,
    description:
      "A spending MCP call needs `confirm: true` with the `quoteId` of its quote; the quote is missing, used, another wallet's or older than 10 minutes. Nothing was spent.",
  },
  QUOTE_MISMATCH: {
    status: 409,
    description: "The confirm call's arguments, price or balance-relevant facts differ from its quote's; ask for a new quote. Nothing was spent.",
  },
  IDEMPOTENCY_KEY_REUSED: { status: 409, description: "This `idempotencyKey` was used for a different payload; use a new key. Nothing was spent." },
  USE_LOCAL_MCP: {
    status: 409,
    description:
      "The remote /mcp endpoint never holds a self-run wallet's key: run `market mcp` locally to sign this (spend, cancel, claim). A hosted agent's owner sends `X-Market-Agent` to spend from its custodied wallet.",
  },
  // ---- issue 29 (the first hour, second pass)
  METHOD_NOT_ALLOWED: {
    status: 405,
    description: "The remote /mcp endpoint is stateless Streamable HTTP: it takes POST only (no GET stream, no session to DELETE).",
  },
  INSUFFICIENT_GAS: {
    status: 0,
    client: true,
    description:
      "The wallet has too little of the chain's native coin to pay the gas of its transaction (a delivery's evidence, a release); nothing was sent. A worker accepts no task until it has it. Send the wallet gas (docs/hosted-agents.md, \"Gas\").",
  },
  KEY_SHARED: {
    status: 0,
    client: true,
    description:
      "Another runtime works with this API key: a task is assigned to the agent that this runtime never took. Run one runtime per key; two race for the same tasks and one's deliveries are refused.",
  },
  // ---- hosted agents (docs/hosted-agents.md)
  HOSTED_AGENT_TOKEN_REFUSED: {
    status: 403,
    description:
      "A hosted agent's own token (`ha_...`) works tasks as its agent; it cannot manage the account (API keys, deploys, its owner's routes). Use a session or an API key of the account.",
  },
  HOSTING_UNAVAILABLE: { status: 503, description: "Hosted agents are not configured on this server (no master key)." },
  DEPLOY_FEE_NOT_PAID: {
    status: 402,
    description:
      "The deploy fee is not paid; `reason` names why: FEE_TX_MISSING, NOT_CONFIRMED, REVERTED, WRONG_RECIPIENT, TOO_SMALL, PAYER_NOT_LINKED or ALREADY_CREDITED.",
  },
  HOSTED_AGENT_NOT_FOUND: { status: 404, description: "No hosted agent with this id (or it was deleted)." },
  NOT_AGENT_OWNER: { status: 403, description: "Only the hosted agent's owner may do this." },
  AGENT_RUNNING: { status: 409, description: "The hosted agent is running; stop it first." },
  WITHDRAWAL_IN_PROGRESS: {
    status: 409,
    description:
      "The service is signing from the hosted agent's wallet (a withdrawal, or its owner's spend over the remote MCP endpoint); start, withdraw, delete and another such spend wait until it has ended.",
  },
  AGENT_QUOTA_EXCEEDED: { status: 409, description: "The account has as many hosted agents as it may have; delete one first." },
  BRIDGE_UNAVAILABLE: { status: 400, description: "Withdrawals go to the owner's address on the settlement chain; bridging out is not offered." },
  NOTHING_TO_WITHDRAW: { status: 409, description: "The agent's wallet holds less of the settlement token than asked (or none)." },
  KEY_EXPORT_NOT_RECORDED: { status: 503, description: "The export could not be recorded, so the key was not released; retry.", retryable: true },
  SERVICE_QUOTA_EXCEEDED: { status: 409, description: "The hosted agent has as many services as it may list; delete one first." },

  // ---- skills and tool types (issue 25)
  SKILL_NOT_FOUND: { status: 404, description: "No such skill (a private skill of another author does not exist for you), or it was deleted." },
  NOT_SKILL_AUTHOR: { status: 403, description: "Only the skill's author may change or delete it." },
  SKILL_SLUG_TAKEN: { status: 409, description: "Another skill has this slug (slugs are unique, deleted skills' included)." },
  SKILL_ALREADY_INSTALLED: { status: 409, description: "The agent has this skill installed already; remove it first to reinstall." },
  SKILL_NOT_INSTALLED: { status: 404, description: "The agent has no skill with this slug installed." },
  SKILL_NEEDS_SECRETS: {
    status: 409,
    description: "The skill needs secrets the agent does not hold (`details` names them); tool secrets are set at deploy only.",
  },
  SKILL_INSTRUCTIONS_TOO_LONG: { status: 400, description: "A skill's instructions are over 16 KB (UTF-8 bytes)." },
  SKILL_TOO_MANY_TOOLS: { status: 400, description: "A skill holds at most 20 tools." },
  SKILL_TOO_MANY_CAPABILITIES: { status: 400, description: "A skill holds at most 10 capability tags." },
  SKILL_QUOTA_EXCEEDED: {
    status: 409,
    description: "The account has as many skills as it may author, or the agent as many installed; remove one first.",
  },
  SKILL_FILE_MALFORMED: {
    status: 400,
    description: "The SKILL.md file is not flat frontmatter between --- lines and a non-empty body, or is over 64 KB; nothing was stored.",
  },
  SKILL_NAME_MISSING: { status: 400, description: "The SKILL.md frontmatter has no `name`; nothing was stored." },
  TOOL_IMPORT_INVALID: {
    status: 400,
    description:
      "The OpenAPI document cannot be imported; `reason`: YAML, NOT_JSON, NOT_OPENAPI_3 (Swagger 2 included), UNSUPPORTED_3_1 (webhooks, jsonSchemaDialect, type lists, const) or NO_OPERATIONS.",
  },
  TOOL_IMPORT_TOO_LARGE: { status: 413, description: "The OpenAPI document is over 10 MB." },
  TOOL_NAME_TOO_LONG: { status: 400, description: "A tool name is over 64 characters." },
  MCP_SERVER_UNREACHABLE: {
    status: 400,
    retryable: true,
    description: "The MCP server could not be reached or refused to list its tools (at deploy or install); nothing was stored.",
  },
  MCP_SERVER_EMPTY: { status: 400, description: "The MCP server lists no tools (or more than 50); nothing was stored." },
  // ---- per-skill badges (issue 25 item 7)
  BADGE_NOT_FOUND: { status: 404, description: "The agent holds no verified badge of that kind and name." },

  // ---- sandbox tools of hosted agents: JS Eval and Sandbox (issue 26, docs/hosted-agents.md "Sandbox tools")
  SANDBOX_UNAVAILABLE: {
    status: 503,
    description:
      "This server has no working sandbox (bubblewrap missing or refused; `GET /health` shows why): JS Eval and Sandbox tools are refused, never run with weaker isolation.",
  },
  SANDBOX_RATE_LIMITED: {
    status: 429,
    description: "The hosted agent started as many sandbox runs this minute as it may (the window starts at its first run and lasts 60 s).",
    retryable: true,
  },
  SANDBOX_DAILY_CAP: {
    status: 429,
    description: "The hosted agent's sandbox runs used today's wall-clock seconds (its daily cost cap); the cap resets at 00:00 UTC.",
    retryable: true,
  },
  SANDBOX_TOOL_IN_SKILL: { status: 400, description: "JS Eval and Sandbox tools need the hosted sandbox and are never allowed inside a skill." },
  // ---- events (issue 27: the event log, its replay and stream)
  EVENT_STREAMS_EXCEEDED: {
    status: 429,
    description: "The account has as many event streams open as it may (`EVENT_STREAMS_PER_ACCOUNT`, default 10); close one first.",
    retryable: true,
  },
  WEBHOOK_NOT_FOUND: { status: 404, description: "No webhook with that id belongs to this account." },
  WEBHOOK_QUOTA_EXCEEDED: {
    status: 409,
    description: "The account has as many webhooks as it may (`WEBHOOKS_PER_ACCOUNT`, default 10); delete one first.",
  },
  WEBHOOK_URL_REFUSED: {
    status: 400,
    description:
      "The webhook URL is not https (http only where private networks are allowed), carries credentials, or names a private or loopback address; `details` says which.",
  },
  WEBHOOKS_UNAVAILABLE: {
    status: 503,
    description: "Webhooks need the server's master key (MARKET_MASTER_KEY) to seal their secrets; none is configured.",
  },

  // ---- issue 23 (security, second pass): the deploy body's bounds (docs/security.md), owner messages
  TOO_MANY_TOOLS: { status: 400, description: "A hosted agent has at most 20 HTTP tools (`details` gives the limit)." },
  TOO_MANY_TOOL_SECRETS: { status: 400, description: "A deploy carries at most 20 `toolSecrets` (`details` gives the limit)." },
  TOO_MANY_TOOL_PARAMETERS: { status: 400, description: "An HTTP tool has at most 30 parameters (`details` names the tool and the limit)." },
  TOO_MANY_PARAM_MAPPINGS: {
    status: 400,
    description: "An HTTP tool's `paramMapping` has at most 30 entries (`details` names the tool and the limit).",
  },
  MESSAGE_QUOTA_EXCEEDED: {
    status: 429,
    description: "The conversation between an owner and its hosted agent holds as many messages as it may this day; retry later.",
    retryable: true,
  },
  // Refusals of `delegate_to_agent` a hosted agent's model gets as `Error: CODE: message` (issue 23 item 1)
  SUBTASK_TO_POSTER_ACCOUNT: {
    status: 403,
    description: "Hosted agent tool `delegate_to_agent`: a sub-task may not go to the parent task's poster nor to an agent of the poster's account.",
  },
  SUBTASK_COUNT_EXCEEDED: {
    status: 429,
    description: "Hosted agent tool `delegate_to_agent`: one task posts at most 3 sub-tasks, over all its rounds.",
  },
  SUBTASK_BUDGET_EXCEEDED: {
    status: 429,
    description:
      "Hosted agent tool `delegate_to_agent`: the sub-tasks of one task pay at most the owner's `maxRewardRaw` and a share of the task's reward (`HOSTED_SUBTASK_SHARE_BPS`), nothing for a task under `HOSTED_SUBTASK_MIN_PARENT_REWARD_RAW`.",
  },
  SUBTASK_DAILY_CAP: {
    status: 429,
    description:
      "Hosted agent tool `delegate_to_agent`: the agent's sub-tasks paid their daily cap (`HOSTED_SUBTASK_DAILY_CAP_RAW`) over the last 24 hours.",
    retryable: true,
  },
  // ---- issue 28 (web app bulk posting): the web app's own row rule (spec "Bulk run behaviour" 7)
  DUPLICATE_ROW: { status: 0, client: true, description: "Web app: a row identical to an earlier row of the file; it is not posted." },
  // ---- client-side (SDK, CLI)
  WRONG_CHAIN: { status: 0, client: true, description: "The RPC's chain id is not the chain the transaction is for." },
  WRONG_RPC: { status: 0, client: true, description: "No RPC URL configured for the chain, or it answers for another chain." },
  ESCROW_NOT_PINNED: { status: 0, client: true, description: "The client has no pinned escrow address for the chain." },
  ESCROW_MISMATCH: { status: 0, client: true, description: "The API named an escrow other than the pinned one." },
  TX_MISMATCH: { status: 0, client: true, description: "The transaction to sign is not exactly the requested call." },
  INVALID_ROWS: { status: 400, description: "Bulk rows are bad (`body.errors` lists each), or no executor can open a private brief." },
  BAD_COLUMNS: { status: 0, client: true, description: "The task file has an unknown column." },
  DUPLICATE_BRIEF: { status: 0, client: true, description: "The same public brief appears twice in one run." },
  NOT_ALL_POSTED: { status: 0, client: true, description: "The run ended with rows left; rerun the same command." },
  SPEND_LIMIT: { status: 0, client: true, description: "The run's total escrow is above `maxTotalRaw`; nothing was spent." },
  NETWORK_ERROR: { status: 0, client: true, retryable: true, description: "The API did not answer (network or timeout)." },
  TX_UNCONFIRMED: {
    status: 0,
    client: true,
    retryable: true,
    description:
      "A transaction was sent but its receipt was not seen; its rows may be paid: list them with indexTask once mined, never post them again.",
  },
  TX_FAILED: { status: 0, client: true, description: "A funding transaction could not be sent; its rows were not paid and the run stopped." },
  STORAGE_MISMATCH: {
    status: 0,
    client: true,
    description:
      "The storage answered an upload with a rootHash that is not the SHA-256 of the private brief's ciphertext; the row is refused, nothing paid.",
  },
  BRIEF_MISMATCH: { status: 0, client: true, description: "The downloaded private brief's SHA-256 is not the task hash; it is not opened." },
  EXECUTION_FAILED: {
    status: 0,
    client: true,
    description:
      "WorkerRuntime: executeTask kept failing (after `executeAttempts` tries with back-off; a task never delivered is then released), delivering failed, or stop() left the task; the task is held, undelivered, and a restart resumes what is still held.",
  },
  TASK_TIMEOUT: {
    status: 0,
    client: true,
    description:
      "WorkerRuntime: an executeTask attempt ran past `taskTimeoutMs` or the task's deadline (its `signal` was aborted); counted as a failed attempt.",
  },
  PRIVATE_KEY_REQUIRED: {
    status: 0,
    client: true,
    description:
      "WorkerRuntime needs `privateKey` (or `existingPrivateKey`): the API key wallet's key, which opens private briefs and signs evidence.",
  },
  CONFIRMATION_REQUIRED: {
    status: 0,
    client: true,
    description: "The CLI run was not confirmed (no terminal to ask on: pass --yes); nothing was sent.",
  },
  RUN_IN_PROGRESS: { status: 0, client: true, description: "Another CLI run holds the task file's journal; wait for it to end." },
  JOURNAL_MISMATCH: {
    status: 0,
    client: true,
    description:
      "The CLI journal was written for another wallet, escrow or chain (id or genesis block), claims a funding the escrow does not have (the chain or escrow was reset), or is damaged; nothing was sent. Move it and the results file away to post the file afresh.",
  },
  ALREADY_FUNDED: {
    status: 0,
    client: true,
    description:
      "Rows of the task file were already paid for by this wallet from a task file (a copy under another name, or a journal moved away); nothing was sent. Answer yes on a terminal, or pass `--allow-repost`, to pay for them again.",
  },
  ROWS_NOT_POSTABLE: {
    status: 0,
    client: true,
    description:
      "Every row a CLI run left can never be posted (NOT_OPEN: paid and no longer open on chain; TASK_HASH_IN_USE or TASK_HASH_CLAIMED: that task hash is taken); rerunning changes nothing (exit 1, not 3).",
  },
} as const);

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CODES, code);
}

/**
 * Clear names for codes whose name misleads, each with the code the API answers. The answered code never changes:
 * clients branch on it, and the spec names some of them (`NOT_TASK_AGENT`). Code raises an error by its clear name
 * (`new MarketError("NOT_WORKER")` answers `NOT_EXECUTOR`); docs/errors.md lists both, with why.
 */
export const ERROR_CODE_ALIASES = {
  FUNDING_WALLET_MISMATCH: "NOT_TASK_AGENT",
  NOT_WORKER: "NOT_EXECUTOR",
  AGENT_NOT_FOUND: "EXECUTOR_NOT_FOUND",
  CRITERIA_FROM_WORKER: "CRITERIA_FROM_EXECUTOR",
  LISTING_FAILED: "INDEX_FAILED",
} as const satisfies Record<string, ErrorCode>;

/** Why each answered code has a clear name (docs/errors.md). */
export const ALIAS_REASONS: Record<ErrorCodeAlias, string> = {
  FUNDING_WALLET_MISMATCH: "The spec's code is about the wallet that paid for (funded) the task, not about an agent.",
  NOT_WORKER: 'The agent doing a task is its worker everywhere else (API fields, SDK, docs); "executor" is the older word.',
  AGENT_NOT_FOUND: "Raised for any agent address nobody registered (profiles, cards, key wraps), not only would-be executors.",
  CRITERIA_FROM_WORKER: "The worker is the party the criteria judge.",
  LISTING_FAILED: "Listing a funded task (`POST /api/v1/a2a/tasks/index`) failed; the indexer is not involved.",
};

export type ErrorCodeAlias = keyof typeof ERROR_CODE_ALIASES;

/** The code the API answers for a code or its clear name. */
export function answeredCode(code: ErrorCode | ErrorCodeAlias): ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CODE_ALIASES, code) ? ERROR_CODE_ALIASES[code as ErrorCodeAlias] : (code as ErrorCode);
}

/** The clear name of an answered code, when it has one. */
export function clearName(code: ErrorCode): ErrorCodeAlias | undefined {
  return (Object.keys(ERROR_CODE_ALIASES) as ErrorCodeAlias[]).find((alias) => ERROR_CODE_ALIASES[alias] === code);
}

/** One refused item of a request (a field, a row, a batch item). */
export interface ErrorDetail {
  code?: string;
  field?: string;
  message: string;
  [key: string]: unknown;
}

/** An error with a stable code, raised by the server and by clients alike. */
export class MarketError extends Error {
  override readonly name: string = "MarketError";
  readonly code: ErrorCode;
  readonly status: number;
  readonly reason?: string;
  readonly details?: ErrorDetail[];

  /** `code` may be a clear name (ERROR_CODE_ALIASES); the error carries the code the API answers. */
  constructor(
    code: ErrorCode | ErrorCodeAlias,
    message: string = ERROR_CODES[answeredCode(code)].description,
    options: { reason?: string; details?: ErrorDetail[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = answeredCode(code);
    this.status = ERROR_CODES[this.code].status;
    if (options.reason !== undefined) this.reason = options.reason;
    if (options.details !== undefined) this.details = options.details;
  }
}
