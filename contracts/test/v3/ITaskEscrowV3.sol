// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ITaskEscrowV3
/// @dev The interface of TaskEscrow 3.0.0 (and 2.0.0, whose ABI is the same), kept for {TaskEscrowV3} and {TaskEscrowV2}.
/// @notice Escrow for paid tasks: a poster locks an ERC-20 reward against a task hash, a worker delivers evidence, and
/// the reward goes to the worker (minus the platform fee) or back to the poster. Nothing settles by itself: every
/// payout or refund happens only when someone sends the matching transaction.
/// @dev Every task ends in exactly one of eight ways, named by {Ending} in the final event of the task.
/// Since 2.0.0: credits are withdrawn only by and to the credited account (`withdrawCreditTo` is gone), and an optional
/// reputation registry records each worker's completions, scores and lost disputes at settlement. Since 3.0.0: the
/// registry records only outcomes the marketplace vouches for (the marketplace verifier assigned the worker and, for a
/// verdict, gave it; a reward of at least 1,000,000 raw units); a task takes one storage slot at funding.
interface ITaskEscrowV3 {
    /// @notice Life cycle of a task. `Funded`, `Assigned` and `Verified` carry the numbers the deployed escrow uses.
    enum Status {
        Funded, // 0: reward locked, no worker yet
        Assigned, // 1: worker set, no evidence yet
        Submitted, // 2: evidence delivered, awaiting a verdict
        Verified, // 3: ended, verification passed and paid
        Failed, // 4: latest verdict failed; the worker may deliver again or appeal
        Disputed, // 5: awaiting the admin's ruling
        Escalated, // 6: delivered work left unjudged past the deadline; the worker may release it after 14 days
        Paid, // 7: ended, paid by a ruling or by releasing unjudged work
        Refunded, // 8: ended, refunded to the poster by claimTimeout or a ruling
        Cancelled // 9: ended, cancelled by the poster while Funded
    }

    /// @notice The eight ways a task ends: three payouts and five refunds.
    enum Ending {
        None, // still live
        VerificationPassed, // payout
        DisputeWonByWorker, // payout
        UnjudgedWorkReleased, // payout
        CancelledWhileOpen, // refund
        NeverDelivered, // refund
        FailedUnfixed, // refund
        DisputeWonByPoster, // refund
        DisputeUnruled // refund
    }

    /// @notice One task as the escrow reports it. Future times are projected: they already include every pause so far.
    struct Task {
        address poster; // funding wallet (the deployed escrow calls it `agent`)
        address worker;
        address verifier; // per-task verifier agent, or zero when the marketplace verifier judges
        address token;
        uint256 amount; // fixed at funding
        uint64 deadline; // evidence must arrive before it; claimTimeout opens at it
        uint64 windowEndsAt; // Failed: end of the worker's appeal (and claim opening); Disputed: unruled-claim opening;
        // Escalated: release opening
        Status status;
        uint8 rounds; // evidence submissions used, at most 3
        Ending ending;
    }

    /// @notice Arguments of one task in {createTasks}.
    struct CreateParams {
        bytes32 taskHash;
        address token;
        uint256 amount;
        uint64 duration;
        address verifier;
    }

    // ------------------------------------------------------------------ errors

    /// @notice The caller is not the admin.
    error NotAdmin(address caller);
    /// @notice The caller is not the proposed admin.
    error NotPendingAdmin(address caller);
    /// @notice The caller is not the marketplace verifier.
    error NotMarketplaceVerifier(address caller);
    /// @notice The caller is not the poster of the task.
    error NotPoster(bytes32 taskHash, address caller);
    /// @notice The caller is not the worker of the task.
    error NotWorker(bytes32 taskHash, address caller);
    /// @notice The caller may not judge this task: its verifier agent, else the marketplace verifier, judges.
    error NotTaskVerifier(bytes32 taskHash, address caller);
    /// @notice Only the poster or the worker of the task may raise a dispute.
    error NotTaskParty(bytes32 taskHash, address caller);

    /// @notice The escrow is paused; only rulings go through.
    error EscrowPaused();
    /// @notice The escrow is not paused.
    error EscrowNotPaused();

    /// @notice A task hash must not be zero.
    error ZeroTaskHash();
    /// @notice The task hash was used before; hashes are never reused, not even after a refund.
    error TaskHashUsed(bytes32 taskHash);
    /// @notice No task was funded under this hash.
    error TaskNotFound(bytes32 taskHash);
    /// @notice The token is not allowed (native currency, `address(0)`, never is).
    error TokenNotAllowed(address token);
    /// @notice Every task of one batch must use the same token.
    error BatchTokenMismatch(uint256 index, address token, address expected);
    /// @notice The amount must be above zero.
    error ZeroAmount();
    /// @notice The amount does not fit the escrow's 96-bit record (far above any token supply in use).
    error AmountTooLarge(uint256 amount, uint256 max);
    /// @notice The duration lies outside [MIN_DURATION, MAX_DURATION].
    error InvalidDuration(uint64 duration);
    /// @notice The poster cannot be the task's verifier agent.
    error VerifierIsPoster(address verifier);
    /// @notice A batch holds between 1 and {maxBatch} tasks.
    error InvalidBatchSize(uint256 size, uint256 max);
    /// @notice The token delivered less than the amount pulled (fee-on-transfer tokens are refused).
    error TokenDeliveredLess(address token, uint256 expected, uint256 received);

    /// @notice The task is not in a state that allows this call.
    error InvalidStatus(bytes32 taskHash, Status status);
    /// @notice A worker must be a non-zero address other than the poster, the task's verifier agent and the
    /// marketplace verifier.
    error InvalidWorker(bytes32 taskHash, address worker);
    /// @notice The deadline has passed.
    error DeadlinePassed(bytes32 taskHash, uint64 deadline);
    /// @notice The deadline has not passed yet.
    error DeadlineNotReached(bytes32 taskHash, uint64 deadline);
    /// @notice All three submission rounds are used.
    error NoRoundsLeft(bytes32 taskHash);
    /// @notice A result hash must not be zero.
    error ZeroResultHash();
    /// @notice A score lies between 0 and 100.
    error InvalidScore(uint8 score);
    /// @notice The 3-day appeal window after the failed verdict has closed.
    error AppealWindowClosed(bytes32 taskHash, uint64 closedAt);
    /// @notice The appeal window, the dispute or the escalation still runs until `opensAt`.
    error WindowStillOpen(bytes32 taskHash, uint64 opensAt);

    /// @notice The fee is above {MAX_FEE_BPS}.
    error FeeExceedsMax(uint16 feeBps, uint16 maxFeeBps);
    /// @notice An address argument must not be zero.
    error ZeroAddress();
    /// @notice Nothing is credited to the caller in this token.
    error NothingToWithdraw(address token, address account);
    /// @notice A settlement that writes to the reputation registry was sent with too little gas to give the registry
    /// its whole budget ({reputationGasLimit}); send it again with more gas. Refused rather than sent short, so that no
    /// caller can make the write fail on purpose and still settle.
    error InsufficientGasForReputation(uint256 available, uint256 required);
    /// @notice A rescue may take only the token balance above what the escrow owes.
    error RescueExceedsSurplus(address token, uint256 requested, uint256 surplus);

    // ------------------------------------------------------------------ events

    /// @notice A task was funded. `deadline` is block time plus duration.
    event TaskCreated(
        bytes32 indexed taskHash,
        address indexed poster,
        address indexed token,
        uint256 amount,
        uint64 deadline,
        address verifier
    );
    /// @notice A worker was assigned, by the poster or by the marketplace verifier.
    event WorkerAssigned(bytes32 indexed taskHash, address indexed worker, address indexed assignedBy);
    /// @notice The worker handed the task back before delivering; it is Funded again.
    event WorkerReleased(bytes32 indexed taskHash, address indexed worker);
    /// @notice The worker delivered evidence for round `round` (1 to 3).
    event EvidenceSubmitted(bytes32 indexed taskHash, address indexed worker, bytes32 resultHash, uint8 round);
    /// @notice A verdict was recorded. A pass is followed by {TaskCompleted} in the same transaction.
    event VerificationCompleted(
        bytes32 indexed taskHash,
        address indexed verifier,
        bool passed,
        uint8 score,
        uint8 round
    );
    /// @notice The poster or the worker raised a dispute.
    event DisputeRaised(bytes32 indexed taskHash, address indexed raisedBy);
    /// @notice The admin ruled; {TaskCompleted} or {TaskRefunded} follows in the same transaction.
    event DisputeResolved(bytes32 indexed taskHash, bool workerWins);
    /// @notice The poster claimed after the deadline while delivered work was unjudged; the worker may release it
    /// at `releasableAt` unless the admin rules first.
    event UnjudgedWorkEscalated(bytes32 indexed taskHash, uint64 releasableAt);

    /// @notice Ending: a payout. `payout + fee` is the task amount.
    event TaskCompleted(bytes32 indexed taskHash, address indexed worker, uint256 payout, uint256 fee, Ending ending);
    /// @notice Ending: the poster cancelled while the task was Funded (ending `CancelledWhileOpen`).
    event TaskCancelled(bytes32 indexed taskHash, address indexed poster, uint256 refund, Ending ending);
    /// @notice Ending: every refund made by {claimTimeout} (`NeverDelivered`, `FailedUnfixed`, `DisputeUnruled`).
    event DeadlineExpired(bytes32 indexed taskHash, address indexed poster, uint256 refund, Ending ending);
    /// @notice Ending: the admin ruled for the poster (ending `DisputeWonByPoster`).
    event TaskRefunded(bytes32 indexed taskHash, address indexed poster, uint256 refund, Ending ending);

    /// @notice A transfer to `account` reverted (e.g. the token froze the account or is paused); the amount waits
    /// for `account` to call {withdrawCredit}.
    event Credited(address indexed token, address indexed account, uint256 amount);
    /// @notice Credited funds were withdrawn. Since 2.0.0 `to` is always `account`; the field stays so that logs of
    /// 1.0.0 (whose `withdrawCreditTo` could name another recipient) decode with the same ABI.
    event CreditWithdrawn(address indexed token, address indexed account, address to, uint256 amount);

    /// @notice The admin set the reputation registry written at settlement; zero stops the writes.
    event ReputationRegistryUpdated(address indexed previousRegistry, address indexed registry);
    /// @notice The reputation write of this settlement failed (the registry reverted, ran out of its gas budget, or
    /// has no code); the settlement went through unchanged. `reason` is the registry's revert data, cut to 256 bytes.
    event ReputationWriteFailed(bytes32 indexed taskHash, address indexed registry, bytes reason);

    event FeeUpdated(uint16 previousFeeBps, uint16 feeBps);
    event TreasuryUpdated(address indexed previousTreasury, address indexed treasury);
    event VerifierUpdated(address indexed previousVerifier, address indexed verifier);
    event TokenAllowed(address indexed token, bool allowed);
    /// @notice The escrow paused at `at`.
    event EscrowPausedAt(uint64 at);
    /// @notice The escrow unpaused; every live deadline and window moved by `pausedFor` seconds.
    event EscrowUnpaused(uint64 pausedFor, uint64 totalPaused);
    event AdminProposed(address indexed admin, address indexed pendingAdmin);
    event AdminTransferred(address indexed previousAdmin, address indexed admin);
    event SurplusRescued(address indexed token, address indexed to, uint256 amount);

    // ------------------------------------------------------------------ set-up

    /// @notice Initializes the proxy once: roles, the fee (at most 3000 bps) and the first allowed token.
    function initialize(
        address admin_,
        address marketplaceVerifier,
        address treasury_,
        uint16 feeBps_,
        address token_
    ) external;

    // ------------------------------------------------------------------ funding

    /// @notice Funds a task: pulls `amount` of `token` from the caller (approve first).
    /// @param verifier Per-task verifier agent, or zero to let the marketplace verifier judge.
    function createTask(bytes32 taskHash, address token, uint256 amount, uint64 duration, address verifier) external;

    /// @notice Funds up to {maxBatch} tasks of one token with one transfer of the total.
    function createTasks(CreateParams[] calldata tasks) external;

    /// @notice {createTask} with an EIP-2612 permit for `amount`, in one transaction.
    function createTaskWithPermit(
        bytes32 taskHash,
        address token,
        uint256 amount,
        uint64 duration,
        address verifier,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice {createTasks} with an EIP-2612 permit for the batch total, in one transaction.
    function createTasksWithPermit(
        CreateParams[] calldata tasks,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    // ------------------------------------------------------------------ life cycle

    /// @notice The poster cancels a Funded task; 100% goes back to the poster.
    function cancelTask(bytes32 taskHash) external;

    /// @notice The poster assigns a worker directly while the task is Funded.
    function assignWorker(bytes32 taskHash, address worker) external;

    /// @notice The marketplace verifier assigns the agent that accepted the task while it is Funded.
    function marketplaceAssign(bytes32 taskHash, address worker) external;

    /// @notice The worker hands an assigned task back before delivering anything; it is Funded (open) again.
    function releaseTask(bytes32 taskHash) external;

    /// @notice The worker records a result hash: from Assigned or a failed round, before the deadline, 3 rounds at most.
    function submitEvidence(bytes32 taskHash, bytes32 resultHash) external;

    /// @notice The verdict on submitted evidence. A pass pays the fee to the treasury and the rest to the worker, and
    /// records a completion with `score` in the reputation registry when one is set and the marketplace vouches for it
    /// (see the contract's notes); a fail opens the 3-day appeal window.
    /// @param score 0 to 100.
    function completeVerification(bytes32 taskHash, bool passed, uint8 score) external;

    /// @notice The poster (before the deadline) or the worker (before the deadline, or within 3 days of a failed
    /// verdict) puts the task under dispute.
    function raiseDispute(bytes32 taskHash) external;

    /// @notice The admin rules on a disputed or escalated task; works while paused. With a reputation registry set, a
    /// ruling for the worker records a completion (no score) and a ruling for the poster records a dispute, when the
    /// marketplace verifier assigned the worker and the reward is at least 1,000,000 raw units.
    function resolveDispute(bytes32 taskHash, bool workerWins) external;

    /// @notice After the deadline the poster refunds a task never delivered, a failed round (3 days after the latest
    /// failed verdict) or a dispute without ruling (14 days after it was raised), or escalates unjudged work.
    function claimTimeout(bytes32 taskHash) external;

    /// @notice The worker collects escalated work 14 days after escalation without a ruling; the fee applies. With a
    /// reputation registry set, records a completion (no score) under the same conditions as a ruling.
    function releaseUnjudgedWork(bytes32 taskHash) external;

    /// @notice Sends the caller's credited funds of `token` to the caller, and only to the caller: while the token
    /// refuses transfers to the caller (a frozen account), the credit stays where it is until the token lets it through.
    function withdrawCredit(address token) external;

    // ------------------------------------------------------------------ views

    function getTask(bytes32 taskHash) external view returns (Task memory);

    /// @notice Platform fee in basis points, read at every payout.
    function feeBps() external view returns (uint16);

    function admin() external view returns (address);

    function pendingAdmin() external view returns (address);

    /// @notice The marketplace verifier.
    function verifier() external view returns (address);

    function treasury() external view returns (address);

    /// @notice Largest batch {createTasks} accepts.
    function maxBatch() external pure returns (uint256);

    function version() external view returns (string memory);

    function isAllowedToken(address token) external view returns (bool);

    function paused() external view returns (bool);

    /// @notice Seconds spent paused so far (the current pause excluded); live deadlines move by this much.
    function totalPaused() external view returns (uint64);

    /// @notice Amount of `token` locked in live tasks.
    function escrowed(address token) external view returns (uint256);

    /// @notice Amount of `token` credited to `account` and not withdrawn.
    function creditOf(address token, address account) external view returns (uint256);

    /// @notice Total of `token` credited to all accounts and not withdrawn.
    function totalCredited(address token) external view returns (uint256);

    /// @notice The reputation registry written at settlement, or zero when none is set.
    function reputationRegistry() external view returns (address);

    /// @notice Gas the reputation registry gets for one write; a settlement that writes needs this much to spare.
    function reputationGasLimit() external pure returns (uint256);

    // ------------------------------------------------------------------ admin

    /// @param newFeeBps At most {MAX_FEE_BPS} (3000).
    function setFeeBps(uint16 newFeeBps) external;

    function setTreasury(address newTreasury) external;

    function setVerifier(address newVerifier) external;

    /// @notice Allows or refuses a token for new tasks; live tasks keep settling in their token.
    function setAllowedToken(address token, bool allowed) external;

    function pause() external;

    function unpause() external;

    /// @notice First step of the admin handover; zero withdraws a proposal.
    function proposeAdmin(address newAdmin) external;

    /// @notice Second step of the admin handover, by the proposed admin.
    function acceptAdmin() external;

    /// @notice Sends tokens held above what the escrow owes (live tasks plus credits), e.g. sent by mistake.
    function rescueSurplus(address token, address to, uint256 amount) external;

    /// @notice Sets the reputation registry ({ITaskReputation}) that settlements write to; zero stops the writes.
    /// The escrow must be one of the registry's writers, or every write fails (and is reported by
    /// {ReputationWriteFailed}).
    function setReputationRegistry(address registry) external;
}
