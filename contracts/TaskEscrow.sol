// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ITaskEscrow} from "./interfaces/ITaskEscrow.sol";
import {ITaskReputation} from "./interfaces/ITaskReputation.sol";

/// @title TaskEscrow
/// @notice UUPS-upgradeable escrow of task rewards. See {ITaskEscrow}.
/// @dev Time runs on an escrow clock (block time minus the time spent paused), so a pause extends every live deadline
/// and window in O(1): stored times are clock readings, and views project them back onto block time.
/// 2.0.0 (upgrade of 1.0.0, storage appended): credits go only to the credited account; settlements write the optional
/// reputation registry under a fixed gas budget (see {_recordReputation}).
/// 3.0.0 (upgrade of 2.0.0, storage appended): a task funded from now on takes one storage slot at funding
/// ({PackedTask} in `packedTasks`); a task funded before stays in `tasks` until its first transition after the upgrade
/// moves it ({_task}), so every rule runs on one layout and a task lives in exactly one of the two mappings. The
/// reputation registry records only the outcomes the marketplace vouches for ({_vouched}).
/// 4.0.0 (upgrade of 3.0.0, storage appended): a payout's fee accrues in the token's {TokenLedger} instead of being sent
/// to the treasury with every payout, and {sweepFees} sends it; the ledger also holds the token's allowance, id and
/// escrowed sum in the one slot that funding and settlement write anyway (a token's {TokenBook} moves into it at its
/// first use since the upgrade, {_ledger}); `settings` in slot 0 lets a proxy deployed at 4.0.0 skip the look-up of
/// tasks funded before 3.0.0 (it has none), and every settlement skip the registry's slot while none is set.
/// @custom:oz-upgrades-from contracts/test/v3/TaskEscrowV3.sol:TaskEscrowV3
/// @custom:security-contact security@market.example
contract TaskEscrow is ITaskEscrow, Initializable, UUPSUpgradeable, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    uint16 public constant MAX_FEE_BPS = 3000;
    uint64 public constant MIN_DURATION = 1 hours;
    uint64 public constant MAX_DURATION = 90 days;
    uint8 public constant MAX_ROUNDS = 3;
    uint32 public constant APPEAL_WINDOW = 3 days;
    uint32 public constant RULING_WINDOW = 14 days;
    uint256 private constant MAX_BATCH = 20;
    uint256 private constant BPS = 10_000;
    /// @dev Gas the reputation registry gets for one write: about twice what {TaskReputation} needs for a first write
    /// through its proxy (about 32,000), so a later registry version has room, while a registry that burns it all adds
    /// at most this much to a settlement.
    uint256 private constant REPUTATION_GAS = 60_000;
    /// @dev Gas the escrow spends between its gas check and the CALL opcode, and for the CALL itself (the registry's
    /// account is already warm from the code-size check): far below this bound.
    uint256 private constant REPUTATION_CALL_OVERHEAD = 1_000;
    /// @dev Longest registry revert data kept in {ReputationWriteFailed}; copying more would let a registry make the
    /// escrow pay for a large memory expansion.
    uint256 private constant MAX_REASON_BYTES = 256;
    /// @dev Smallest reward whose outcome the reputation registry records: the off-chain rule's minimum
    /// (core/limits.ts REPUTATION_MIN_CREDITED_REWARD_RAW, 1 USDC in raw units), so that dust tasks farm nothing.
    uint256 private constant MIN_REPUTATION_REWARD = 1_000_000;
    /// @dev {PackedTask} `state`: the Status in the low four bits, the Ending (0 while live) in the high four.
    uint8 private constant STATUS_BITS = 4;
    uint8 private constant STATUS_MASK = 0x0f;
    /// @dev {PackedTask} `flags`, written at assignment: the marketplace verifier assigned the worker
    /// ({marketplaceAssign}); a verifier agent, not the marketplace verifier, judges the task.
    uint8 private constant MARKETPLACE_ASSIGNED = 1;
    uint8 private constant JUDGED_BY_AGENT = 2;
    /// @dev `settings` (4.0.0): the proxy was deployed at 4.0.0 or later, so `tasks` (the layout before 3.0.0) is empty
    /// for good; set only by {initialize}, never by an upgrade.
    uint8 private constant NO_LEGACY_TASKS = 1;
    /// @dev `settings` (4.0.0): no reputation registry is set (kept by {setReputationRegistry} and {initialize}). Clear
    /// after an upgrade: the first settlement that reads `reputation` and finds none sets it ({_registry}).
    uint8 private constant NO_REPUTATION_REGISTRY = 2;
    /// @dev {TokenLedger} `flags`: the ledger holds the token's allowance, id and escrowed sum (its {TokenBook} fields
    /// `allowed` and `escrowed` are no longer read); new tasks may use the token.
    uint8 private constant LEDGER_OPEN = 1;
    uint8 private constant LEDGER_ALLOWED = 2;

    /// @dev A task funded before 3.0.0, in four slots: slots 0 and 1 were written at funding, slot 3 too when there is
    /// a verifier agent. Times are escrow-clock seconds: uint32 lasts until 2106, and the clock never runs ahead of
    /// block time. Read by {getTask} and moved to {PackedTask} by {_task}; never written since 3.0.0.
    struct TaskRecord {
        // slot 0
        address token;
        uint96 amount; // checked at funding (AmountTooLarge); 2^96 raw units is far above any token supply in use
        // slot 1
        address poster; // non-zero for every funded task: the existence flag
        uint32 deadline;
        uint32 phaseAt; // when the latest failed verdict, dispute or escalation happened
        Status status;
        uint8 rounds;
        Ending ending;
        // slot 2, written at assignment
        address worker;
        // slot 3, written only for tasks with a verifier agent
        address verifier;
    }

    /// @dev A task funded since 3.0.0. Funding writes slot 0 alone when the amount fits 40 bits (up to about 1.1
    /// million USDC) and the token has an id ({_tokenId}: the first 255 tokens funded since the upgrade): slot 1 is
    /// written at assignment, slot 2 at funding only with a verifier agent, slot 3 at funding only when slot 0 cannot
    /// hold the token or the amount. Times are escrow-clock seconds, as in {TaskRecord}.
    struct PackedTask {
        // slot 0, written at funding and by every transition (a submission and a passing verdict write only this slot)
        address poster; // non-zero for every task in `packedTasks`: the existence flag
        uint40 amount; // 0: the amount is `wideAmount`
        uint32 deadline;
        uint8 state; // Status in the low four bits, Ending (0 while live) in the high four: see {_state}
        uint8 rounds; // evidence submissions used, at most MAX_ROUNDS
        uint8 tokenId; // 0: the token is `wideToken`
        // slot 1, written at assignment and release, and by failed verdicts, disputes and escalations (`phaseAt`)
        address worker;
        uint32 phaseAt; // when the latest failed verdict, dispute or escalation happened
        uint8 flags; // MARKETPLACE_ASSIGNED, JUDGED_BY_AGENT; valid while `worker` is set
        // slot 2, written at funding only for a task with a verifier agent
        address verifier;
        // slot 3, written at funding only when `amount` or `tokenId` is 0 (then both are)
        address wideToken;
        uint96 wideAmount;
    }

    /// @dev Per-token book in one slot: whether new tasks may use it, and what the escrow owes in it. Since 4.0.0 only
    /// `credited` is read once the token's {TokenLedger} is open; {_openLedger} moves the other two into it.
    struct TokenBook {
        bool allowed;
        uint128 escrowed; // sum of live task amounts
        uint120 credited; // sum of credits not yet withdrawn
    }

    /// @dev (4.0.0) The per-token record every funding and every ending reads and writes, in one slot: funding reads
    /// the allowance and the token's id and adds to `escrowed`; a payout moves the amount out of `escrowed` and the fee
    /// into `fees` with the same write. Opened from the token's {TokenBook} at its first use since the upgrade.
    struct TokenLedger {
        uint8 flags; // LEDGER_OPEN, LEDGER_ALLOWED
        uint8 id; // the token's id in {PackedTask} slot 0; 0: none yet (or all 255 handed out)
        uint120 escrowed; // sum of live task amounts
        uint120 fees; // fees kept from payouts since the last sweep, owed to the treasury
    }

    /// @custom:storage-location erc7201:market.storage.TaskEscrow
    struct TaskEscrowStorage {
        // slot 0: read by nearly every call
        address verifier;
        uint16 feeBps;
        uint32 pausedAt; // block time the current pause began; 0 when not paused
        uint32 totalPaused; // seconds of every finished pause
        uint8 settings; // (4.0.0, in bytes slot 0 left unused) NO_LEGACY_TASKS, NO_REPUTATION_REGISTRY
        // slot 1
        address admin;
        // slot 2
        address pendingAdmin;
        // slot 3
        address treasury;
        mapping(address token => TokenBook) tokens;
        mapping(bytes32 taskHash => TaskRecord) tasks;
        mapping(address token => mapping(address account => uint256)) credits;
        // slot 7 (2.0.0)
        address reputation; // the registry written at settlement; zero: none
        uint8 tokenCount; // (3.0.0) token ids handed out so far, at most 255
        // slot 8 (3.0.0)
        mapping(bytes32 taskHash => PackedTask) packedTasks;
        // slot 9 (3.0.0)
        mapping(address token => uint8 tokenId) tokenIds;
        // slot 10 (3.0.0)
        mapping(uint8 tokenId => address token) tokensById;
        // slot 11 (4.0.0)
        mapping(address token => TokenLedger) ledgers;
    }

    // keccak256(abi.encode(uint256(keccak256("market.storage.TaskEscrow")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant TASK_ESCROW_STORAGE_LOCATION =
        0x545305817ce5a986738171e90314653b81f48e2551d12e6a74b3c1c48ba5c200;

    function _getTaskEscrowStorage() private pure returns (TaskEscrowStorage storage $) {
        assembly {
            $.slot := TASK_ESCROW_STORAGE_LOCATION
        }
    }

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @param token_ The first allowed token (the settlement token).
    function initialize(
        address admin_,
        address marketplaceVerifier,
        address treasury_,
        uint16 feeBps_,
        address token_
    ) external initializer {
        if (
            admin_ == address(0) || marketplaceVerifier == address(0) || treasury_ == address(0) || token_ == address(0)
        ) revert ZeroAddress();
        if (feeBps_ > MAX_FEE_BPS) revert FeeExceedsMax(feeBps_, MAX_FEE_BPS);
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        $.admin = admin_;
        $.verifier = marketplaceVerifier;
        $.treasury = treasury_;
        $.feeBps = feeBps_;
        // A proxy deployed at this version never held a task of the layout before 3.0.0, nor a registry yet.
        $.settings = NO_LEGACY_TASKS | NO_REPUTATION_REGISTRY;
        $.ledgers[token_].flags = LEDGER_OPEN | LEDGER_ALLOWED;
        emit AdminTransferred(address(0), admin_);
        emit VerifierUpdated(address(0), marketplaceVerifier);
        emit TreasuryUpdated(address(0), treasury_);
        emit FeeUpdated(0, feeBps_);
        emit TokenAllowed(token_, true);
    }

    // ------------------------------------------------------------------ funding

    /// @inheritdoc ITaskEscrow
    function createTask(
        bytes32 taskHash,
        address token,
        uint256 amount,
        uint64 duration,
        address verifier_
    ) external nonReentrant {
        _createTask(taskHash, token, amount, duration, verifier_);
    }

    /// @inheritdoc ITaskEscrow
    function createTaskWithPermit(
        bytes32 taskHash,
        address token,
        uint256 amount,
        uint64 duration,
        address verifier_,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external nonReentrant {
        _permit(token, amount, permitDeadline, v, r, s);
        _createTask(taskHash, token, amount, duration, verifier_);
    }

    /// @inheritdoc ITaskEscrow
    function createTasks(CreateParams[] calldata tasks) external nonReentrant {
        _createTasks(tasks);
    }

    /// @inheritdoc ITaskEscrow
    function createTasksWithPermit(
        CreateParams[] calldata tasks,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external nonReentrant {
        uint256 total;
        for (uint256 i; i < tasks.length; ++i) total += tasks[i].amount;
        if (tasks.length != 0) _permit(tasks[0].token, total, permitDeadline, v, r, s);
        _createTasks(tasks);
    }

    function _createTask(bytes32 taskHash, address token, uint256 amount, uint64 duration, address verifier_) private {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint256 slot0 = _liveSlot0($);
        (TokenLedger storage ledger, uint8 tokenId, uint120 escrowed_) = _fundingLedger($, token);
        _recordTask($, slot0, taskHash, token, tokenId, amount, duration, verifier_);
        // Booked before the transfer (checks-effects-interactions); a short delivery reverts it all.
        ledger.escrowed = escrowed_ + SafeCast.toUint120(amount);
        _pull(token, amount);
    }

    function _createTasks(CreateParams[] calldata tasks) private {
        uint256 count = tasks.length;
        if (count == 0 || count > MAX_BATCH) revert InvalidBatchSize(count, MAX_BATCH);
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint256 slot0 = _liveSlot0($);
        address token = tasks[0].token;
        (TokenLedger storage ledger, uint8 tokenId, uint120 escrowed_) = _fundingLedger($, token);
        uint256 total;
        for (uint256 i; i < count; ++i) {
            CreateParams calldata p = tasks[i];
            if (p.token != token) revert BatchTokenMismatch(i, p.token, token);
            _recordTask($, slot0, p.taskHash, token, tokenId, p.amount, p.duration, p.verifier);
            // Each amount was checked below 2^96 in _recordTask, and there are at most 20: no overflow.
            unchecked {
                total += p.amount;
            }
        }
        ledger.escrowed = escrowed_ + SafeCast.toUint120(total);
        _pull(token, total);
    }

    /// @param slot0 The namespace's slot 0 ({_liveSlot0}): the clock and `settings`.
    function _recordTask(
        TaskEscrowStorage storage $,
        uint256 slot0,
        bytes32 taskHash,
        address token,
        uint8 tokenId,
        uint256 amount,
        uint64 duration,
        address verifier_
    ) private {
        if (taskHash == bytes32(0)) revert ZeroTaskHash();
        if (amount == 0) revert ZeroAmount();
        if (amount > type(uint96).max) revert AmountTooLarge(amount, type(uint96).max);
        if (duration < MIN_DURATION || duration > MAX_DURATION) revert InvalidDuration(duration);
        if (verifier_ == msg.sender) revert VerifierIsPoster(verifier_);
        PackedTask storage t = $.packedTasks[taskHash];
        // A hash is used for good in either layout: {_task} moves a task funded before 3.0.0, it never copies one. A
        // proxy deployed at 4.0.0 or later has no such task, and skips the look-up.
        if (
            t.poster != address(0) ||
            (uint8(slot0 >> 240) & NO_LEGACY_TASKS == 0 && $.tasks[taskHash].poster != address(0))
        ) revert TaskHashUsed(taskHash);

        // duration <= 90 days, checked above; the sum is checked and overflows only after the year 2106
        _storeFunding(t, msg.sender, token, tokenId, amount, _clockOf(slot0) + SafeCast.toUint32(duration));
        if (verifier_ != address(0)) t.verifier = verifier_;
        // Not paused here, so block time and the projected deadline agree.
        emit TaskCreated(taskHash, msg.sender, token, amount, uint64(block.timestamp) + duration, verifier_);
    }

    /// @dev Writes what funding fixes: slot 0 of `t`, and slot 3 when the token has no id or the amount needs more
    /// than 40 bits. `amount` is below 2^96 (checked by every caller). Slot 0 is empty here (its poster is the existence
    /// flag, and no field of it is written without one), so it is written whole, once, as {PackedTask} lays it out:
    /// poster at bit 0, amount at 160, deadline at 200, state 0 (Funded) at 232, rounds 0 at 240, token id at 248.
    function _storeFunding(
        PackedTask storage t,
        address poster,
        address token,
        uint8 tokenId,
        uint256 amount,
        uint32 deadline
    ) private {
        uint256 slot0 = uint256(uint160(poster)) | (uint256(deadline) << 200);
        if (tokenId != 0 && amount <= type(uint40).max) {
            slot0 |= (amount << 160) | (uint256(tokenId) << 248);
        } else {
            t.wideToken = token;
            t.wideAmount = SafeCast.toUint96(amount);
        }
        assembly ("memory-safe") {
            sstore(t.slot, slot0)
        }
    }

    /// @dev The ledger of a token new tasks may use (else {TokenNotAllowed}), with what funding reads of it, read once:
    /// the token's id for slot 0 of a {PackedTask} (handed out here at the token's first funding since 3.0.0,
    /// {_newTokenId}) and the escrowed sum the caller adds to.
    function _fundingLedger(
        TaskEscrowStorage storage $,
        address token
    ) private returns (TokenLedger storage ledger, uint8 id, uint120 escrowed_) {
        ledger = $.ledgers[token];
        TokenLedger memory books = ledger;
        if (books.flags & LEDGER_OPEN == 0) {
            _openLedger($, token, ledger);
            books = ledger;
        }
        if (books.flags & LEDGER_ALLOWED == 0) revert TokenNotAllowed(token);
        id = books.id;
        if (id == 0) ledger.id = id = _newTokenId($, token);
        escrowed_ = books.escrowed;
    }

    /// @dev A new id for `token` (which writes `tokensById`, once per token; the caller keeps it in the token's ledger);
    /// 0 once all 255 ids are out, and the token's tasks then keep it in slot 3.
    function _newTokenId(TaskEscrowStorage storage $, address token) private returns (uint8 id) {
        uint8 count = $.tokenCount;
        if (count == type(uint8).max) return 0;
        // count < 255, checked above
        unchecked {
            id = count + 1;
        }
        $.tokenCount = id;
        $.tokensById[id] = token;
    }

    /// @dev The token's ledger, opened from its {TokenBook} (and the id 3.0.0 gave it) at its first use since 4.0.0.
    function _ledger(TaskEscrowStorage storage $, address token) private returns (TokenLedger storage ledger) {
        ledger = $.ledgers[token];
        if (ledger.flags & LEDGER_OPEN == 0) _openLedger($, token, ledger);
    }

    /// @dev Moves the allowance and the escrowed sum out of the token's book (which keeps `credited`), once per token.
    /// An escrowed sum is a sum of live amounts below 2^96 each: 2^120 is out of reach (SafeCast reverts otherwise).
    function _openLedger(TaskEscrowStorage storage $, address token, TokenLedger storage ledger) private {
        TokenBook storage book = $.tokens[token];
        ledger.flags = book.allowed ? LEDGER_OPEN | LEDGER_ALLOWED : LEDGER_OPEN;
        ledger.id = $.tokenIds[token];
        ledger.escrowed = SafeCast.toUint120(book.escrowed);
        book.allowed = false;
        book.escrowed = 0;
    }

    /// @dev What a view reads of a token's ledger, opened or not: whether new tasks may use it, the escrowed sum and the
    /// fees accrued.
    function _ledgerView(
        TaskEscrowStorage storage $,
        address token
    ) private view returns (bool allowed, uint256 escrowed_, uint256 fees) {
        TokenLedger memory ledger = $.ledgers[token];
        if (ledger.flags & LEDGER_OPEN != 0) {
            return (ledger.flags & LEDGER_ALLOWED != 0, ledger.escrowed, ledger.fees);
        }
        TokenBook memory book = $.tokens[token];
        return (book.allowed, book.escrowed, 0);
    }

    /// @dev A permit failure is ignored on purpose: a front-runner may have spent the permit already, and the
    /// transfer below still fails if the allowance is missing. A token the escrow does not take is not called at all:
    /// the funding fails with {TokenNotAllowed}, and a call to an address without code (`address(0)`) would revert
    /// before try/catch could catch it.
    function _permit(address token, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) private {
        (bool allowed, , ) = _ledgerView(_getTaskEscrowStorage(), token);
        if (!allowed) return;
        try IERC20Permit(token).permit(msg.sender, address(this), value, deadline, v, r, s) {} catch {}
    }

    function _pull(address token, uint256 amount) private {
        uint256 before = _balanceOfThis(token);
        IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        uint256 received = _balanceOfThis(token) - before;
        if (received < amount) revert TokenDeliveredLess(token, amount, received);
    }

    /// @dev `IERC20(token).balanceOf(address(this))` in scratch space, without the compiler's memory allocation and
    /// decoder: it reverts alike (the token's revert data bubbled up; fewer than 32 bytes returned, as from an address
    /// without code, reverts without data).
    function _balanceOfThis(address token) private view returns (uint256 held) {
        assembly ("memory-safe") {
            mstore(0x00, 0x70a08231) // balanceOf(address)
            mstore(0x20, address())
            if iszero(staticcall(gas(), token, 0x1c, 0x24, 0x00, 0x20)) {
                let data := mload(0x40)
                returndatacopy(data, 0, returndatasize())
                revert(data, returndatasize())
            }
            if lt(returndatasize(), 0x20) {
                revert(0, 0)
            }
            held := mload(0x00)
        }
    }

    // ------------------------------------------------------------------ life cycle

    /// @inheritdoc ITaskEscrow
    function cancelTask(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _requireLive($);
        PackedTask storage t = _task($, taskHash);
        address poster = t.poster;
        if (msg.sender != poster) revert NotPoster(taskHash, msg.sender);
        Status status = _status(t);
        if (status != Status.Funded) revert InvalidStatus(taskHash, status);
        uint256 refund = _refundPoster($, t, Status.Cancelled, Ending.CancelledWhileOpen);
        emit TaskCancelled(taskHash, poster, refund, Ending.CancelledWhileOpen);
    }

    /// @inheritdoc ITaskEscrow
    function assignWorker(bytes32 taskHash, address worker) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        PackedTask storage t = _task($, taskHash);
        if (msg.sender != t.poster) revert NotPoster(taskHash, msg.sender);
        _assign($, taskHash, t, worker, 0);
    }

    /// @inheritdoc ITaskEscrow
    function marketplaceAssign(bytes32 taskHash, address worker) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        if (msg.sender != $.verifier) revert NotMarketplaceVerifier(msg.sender);
        _assign($, taskHash, _task($, taskHash), worker, MARKETPLACE_ASSIGNED);
    }

    function _assign(
        TaskEscrowStorage storage $,
        bytes32 taskHash,
        PackedTask storage t,
        address worker,
        uint8 assignedBy
    ) private {
        uint32 clock = _clockWhenLive($);
        Status status = _status(t);
        if (status != Status.Funded) revert InvalidStatus(taskHash, status);
        uint32 deadline = t.deadline;
        if (clock >= deadline) revert DeadlinePassed(taskHash, _toBlockTime($, deadline));
        address agent = t.verifier;
        // The marketplace verifier never works a task: it judges every task without a verifier agent.
        if (worker == address(0) || worker == t.poster || worker == agent || worker == $.verifier) {
            revert InvalidWorker(taskHash, worker);
        }
        t.worker = worker;
        t.flags = agent == address(0) ? assignedBy : assignedBy | JUDGED_BY_AGENT;
        t.state = uint8(Status.Assigned);
        emit WorkerAssigned(taskHash, worker, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    function releaseTask(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _requireLive($);
        PackedTask storage t = _task($, taskHash);
        if (msg.sender != t.worker) revert NotWorker(taskHash, msg.sender);
        // Assigned means no round was delivered yet: nothing the task holds belongs to this worker.
        Status status = _status(t);
        if (status != Status.Assigned) revert InvalidStatus(taskHash, status);
        t.state = uint8(Status.Funded);
        // Slot 1 back to zero: no worker, no flags, no phase (nothing happened since the assignment).
        t.worker = address(0);
        t.flags = 0;
        emit WorkerReleased(taskHash, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    /// @dev No reentrancy guard: it calls out to nothing and writes only its own task's record, so a call from inside
    /// another call's token transfer finds a closed task refused (InvalidStatus) like any later call. Saves ~490 gas.
    function submitEvidence(bytes32 taskHash, bytes32 resultHash) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        PackedTask storage t = _task($, taskHash);
        if (msg.sender != t.worker) revert NotWorker(taskHash, msg.sender);
        Status status = _status(t);
        if (status != Status.Assigned && status != Status.Failed) revert InvalidStatus(taskHash, status);
        uint32 deadline = t.deadline;
        if (clock >= deadline) revert DeadlinePassed(taskHash, _toBlockTime($, deadline));
        uint8 round = t.rounds;
        if (round >= MAX_ROUNDS) revert NoRoundsLeft(taskHash);
        if (resultHash == bytes32(0)) revert ZeroResultHash();
        // round < MAX_ROUNDS, checked above
        unchecked {
            ++round;
        }
        _submitted(t, round);
        emit EvidenceSubmitted(taskHash, msg.sender, resultHash, round);
    }

    /// @inheritdoc ITaskEscrow
    function completeVerification(bytes32 taskHash, bool passed, uint8 score) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        PackedTask storage t = _task($, taskHash);
        if (msg.sender != _judge($, t)) revert NotTaskVerifier(taskHash, msg.sender);
        Status status = _status(t);
        if (status != Status.Submitted) revert InvalidStatus(taskHash, status);
        if (score > 100) revert InvalidScore(score);
        if (passed) {
            // Emitted before the payout so the ending event (TaskCompleted) stays the last of the transaction.
            emit VerificationCompleted(taskHash, msg.sender, true, score, t.rounds);
            _payWorker($, taskHash, t, Status.Verified, Ending.VerificationPassed, true, score);
        } else {
            t.state = uint8(Status.Failed);
            t.phaseAt = clock;
            emit VerificationCompleted(taskHash, msg.sender, false, score, t.rounds);
        }
    }

    /// @inheritdoc ITaskEscrow
    function raiseDispute(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        PackedTask storage t = _task($, taskHash);
        Status status = _status(t);
        if (status != Status.Assigned && status != Status.Submitted && status != Status.Failed) {
            revert InvalidStatus(taskHash, status);
        }
        uint32 deadline = t.deadline;
        bool beforeDeadline = clock < deadline;
        if (msg.sender == t.worker) {
            // The worker appeals a failed verdict within the appeal window, even past the deadline.
            if (status == Status.Failed) {
                uint32 appealEnd = t.phaseAt + APPEAL_WINDOW;
                if (!beforeDeadline && clock >= appealEnd) {
                    revert AppealWindowClosed(taskHash, _toBlockTime($, _max(appealEnd, deadline)));
                }
            } else if (!beforeDeadline) {
                revert DeadlinePassed(taskHash, _toBlockTime($, deadline));
            }
        } else if (msg.sender == t.poster) {
            if (!beforeDeadline) revert DeadlinePassed(taskHash, _toBlockTime($, deadline));
        } else {
            revert NotTaskParty(taskHash, msg.sender);
        }
        t.state = uint8(Status.Disputed);
        t.phaseAt = clock;
        emit DisputeRaised(taskHash, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    /// @dev Not held by the pause: rulings are how the admin unwinds an incident.
    function resolveDispute(bytes32 taskHash, bool workerWins) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        PackedTask storage t = _task($, taskHash);
        Status status = _status(t);
        if (status != Status.Disputed && status != Status.Escalated) revert InvalidStatus(taskHash, status);
        emit DisputeResolved(taskHash, workerWins);
        if (workerWins) {
            _payWorker($, taskHash, t, Status.Paid, Ending.DisputeWonByWorker, false, 0);
        } else {
            (address token, uint256 refund) = _fundsOf($, t);
            _close($, t, Status.Refunded, Ending.DisputeWonByPoster, token, refund, 0);
            if (_vouched(t, refund, false)) {
                address registry = _registry($);
                if (registry != address(0)) {
                    bytes memory write = abi.encodeCall(ITaskReputation.recordDispute, (t.worker, taskHash));
                    _recordReputation(registry, taskHash, write);
                }
            }
            address poster = t.poster;
            _send($, token, poster, refund);
            emit TaskRefunded(taskHash, poster, refund, Ending.DisputeWonByPoster);
        }
    }

    /// @inheritdoc ITaskEscrow
    function claimTimeout(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        PackedTask storage t = _task($, taskHash);
        address poster = t.poster;
        if (msg.sender != poster) revert NotPoster(taskHash, msg.sender);
        uint32 deadline = t.deadline;
        if (clock < deadline) revert DeadlineNotReached(taskHash, _toBlockTime($, deadline));

        Status status = _status(t);
        Ending ending;
        if (status == Status.Funded || status == Status.Assigned) {
            ending = Ending.NeverDelivered;
        } else if (status == Status.Failed) {
            _requireWindowPassed($, taskHash, clock, t.phaseAt + APPEAL_WINDOW);
            ending = Ending.FailedUnfixed;
        } else if (status == Status.Disputed) {
            _requireWindowPassed($, taskHash, clock, t.phaseAt + RULING_WINDOW);
            ending = Ending.DisputeUnruled;
        } else if (status == Status.Submitted) {
            t.state = uint8(Status.Escalated);
            t.phaseAt = clock;
            emit UnjudgedWorkEscalated(taskHash, _toBlockTime($, clock + RULING_WINDOW));
            return;
        } else {
            revert InvalidStatus(taskHash, status);
        }
        uint256 refund = _refundPoster($, t, Status.Refunded, ending);
        emit DeadlineExpired(taskHash, poster, refund, ending);
    }

    /// @inheritdoc ITaskEscrow
    function releaseUnjudgedWork(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        PackedTask storage t = _task($, taskHash);
        if (msg.sender != t.worker) revert NotWorker(taskHash, msg.sender);
        Status status = _status(t);
        if (status != Status.Escalated) revert InvalidStatus(taskHash, status);
        _requireWindowPassed($, taskHash, clock, t.phaseAt + RULING_WINDOW);
        _payWorker($, taskHash, t, Status.Paid, Ending.UnjudgedWorkReleased, false, 0);
    }

    /// @inheritdoc ITaskEscrow
    /// @dev Only to the caller: a credit exists because a transfer to this account failed, typically because the token
    /// froze it. Sending it anywhere else would let a frozen account move funds past the token's own controls. While
    /// the token still refuses the caller, this reverts with the token's error and the credit stays.
    function withdrawCredit(address token) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _requireLive($);
        uint256 amount = $.credits[token][msg.sender];
        if (amount == 0) revert NothingToWithdraw(token, msg.sender);
        $.credits[token][msg.sender] = 0;
        // amount is part of credited
        unchecked {
            $.tokens[token].credited -= uint120(amount);
        }
        IERC20(token).safeTransfer(msg.sender, amount);
        emit CreditWithdrawn(token, msg.sender, msg.sender, amount);
    }

    /// @inheritdoc ITaskEscrow
    /// @dev Always to the treasury of the moment, whoever calls: a fee accrued under an earlier treasury goes to the
    /// current one. A transfer the token refuses reverts the sweep (no credit: nothing is lost, the fees stay accrued).
    function sweepFees(address token) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _requireLive($);
        address treasury_ = $.treasury;
        if (msg.sender != treasury_ && msg.sender != $.admin) revert NotFeeSweeper(msg.sender);
        // Only an open ledger holds fees.
        TokenLedger storage ledger = $.ledgers[token];
        uint256 amount = ledger.fees;
        if (amount == 0) revert NoFeesAccrued(token);
        ledger.fees = 0;
        IERC20(token).safeTransfer(treasury_, amount);
        emit FeesSwept(token, treasury_, amount);
    }

    // ------------------------------------------------------------------ settlement

    /// @dev Ends the task: the fee, read now and rounded down, stays in the escrow for the treasury (the token's ledger
    /// `fees`, swept by {sweepFees}) and the rest goes to the worker. The completion is recorded (with `score` when
    /// `scored`) before the transfer, so the ending event stays last.
    function _payWorker(
        TaskEscrowStorage storage $,
        bytes32 taskHash,
        PackedTask storage t,
        Status status,
        Ending ending,
        bool scored,
        uint8 score
    ) private {
        (address token, uint256 amount) = _fundsOf($, t);
        uint256 fee;
        uint256 payout;
        // amount < 2^96 and feeBps <= 3000: the product fits, and fee <= amount
        unchecked {
            fee = (amount * $.feeBps) / BPS;
            payout = amount - fee;
        }
        _close($, t, status, ending, token, amount, fee);
        address worker = t.worker;
        if (_vouched(t, amount, scored)) {
            address registry = _registry($);
            if (registry != address(0)) {
                _recordReputation(
                    registry,
                    taskHash,
                    abi.encodeCall(ITaskReputation.recordCompletion, (worker, taskHash, scored, score))
                );
            }
        }
        _send($, token, worker, payout);
        emit TaskCompleted(taskHash, worker, payout, fee, ending);
    }

    /// @dev Ends the task with 100% back to the poster. The caller emits the ending event.
    function _refundPoster(
        TaskEscrowStorage storage $,
        PackedTask storage t,
        Status status,
        Ending ending
    ) private returns (uint256 amount) {
        address token;
        (token, amount) = _fundsOf($, t);
        _close($, t, status, ending, token, amount, 0);
        _send($, token, t.poster, amount);
    }

    /// @dev Ends the task: its amount leaves the token's escrowed sum, and `fee` (0 for a refund) joins its fees, with
    /// one write of the token's ledger.
    function _close(
        TaskEscrowStorage storage $,
        PackedTask storage t,
        Status status,
        Ending ending,
        address token,
        uint256 amount,
        uint256 fee
    ) private {
        t.state = _state(status, ending);
        TokenLedger storage ledger = _ledger($, token);
        TokenLedger memory books = ledger;
        // A live task's amount is part of escrowed; fee <= amount, so fees + fee stays below escrowed + fees, a sum
        // the funding's SafeCast kept below 2^120 (checked all the same).
        unchecked {
            books.escrowed -= uint120(amount);
        }
        books.fees += uint120(fee);
        (ledger.escrowed, ledger.fees) = (books.escrowed, books.fees);
    }

    /// @dev Whether the marketplace vouches for this outcome, so that the reputation registry records it. Only when
    /// the marketplace verifier assigned the worker (a poster cannot credit a wallet of its own, nor charge a dispute
    /// to a wallet that never took its task), the reward is at least MIN_REPUTATION_REWARD, and, for a verdict, the
    /// marketplace verifier gave it (a verifier agent is the poster's choice: its scores neither farm nor grief). A
    /// ruling is the admin's, and released work was escalated unjudged: neither carries an agent's score.
    function _vouched(PackedTask storage t, uint256 amount, bool verdict) private view returns (bool) {
        uint8 flags = t.flags;
        if (flags & MARKETPLACE_ASSIGNED == 0 || amount < MIN_REPUTATION_REWARD) return false;
        return !verdict || flags & JUDGED_BY_AGENT == 0;
    }

    /// @dev A transfer that fails (e.g. a blocked recipient) must not hold up the ending: the amount is credited.
    function _send(TaskEscrowStorage storage $, address token, address to, uint256 amount) private {
        if (amount == 0) return;
        if (IERC20(token).trySafeTransfer(to, amount)) return;
        $.credits[token][to] += amount;
        $.tokens[token].credited += SafeCast.toUint120(amount);
        emit Credited(token, to, amount);
    }

    /// @dev Writes the reputation registry without letting it block or change the settlement (callers skip the call,
    /// and the encoding, when no registry is set: see {_registry}). The call gets exactly REPUTATION_GAS,
    /// its revert data is cut to MAX_REASON_BYTES, and a failure (revert, out of gas, no code at the address) only
    /// emits {ReputationWriteFailed}. The task is already closed (effects first), every
    /// entry point that moves funds is nonReentrant, and the token transfers come after this call.
    ///
    /// Gas griefing (the 63/64 rule): a CALL forwards at most 63/64 of the gas left, so a caller could send just enough
    /// gas for the registry to run short and fail while the 1/64 kept back finishes the settlement, skipping the
    /// write on purpose (a judge keeping a score off the record, a ruling against a worker that leaves no dispute
    /// behind). Here the token transfers after the call already need more than the 1/64 kept back, so a short-changed
    /// call would take the settlement down with it; but that depends on what follows the call. The escrow therefore
    /// also checks before the call that the registry can get its whole budget, and otherwise reverts the settlement
    /// with {InsufficientGasForReputation}. A write can then only fail through the registry's own fault, having had
    /// REPUTATION_GAS; the caller's only way forward is to send more gas.
    function _recordReputation(address registry, bytes32 taskHash, bytes memory data) private {
        if (registry.code.length == 0) {
            // A call to an address without code would "succeed" without writing anything.
            emit ReputationWriteFailed(taskHash, registry, "");
            return;
        }
        // REPUTATION_GAS + REPUTATION_GAS / 63 leaves REPUTATION_GAS after the 1/64 the CALL keeps back.
        uint256 required = REPUTATION_GAS + REPUTATION_GAS / 63 + REPUTATION_CALL_OVERHEAD;
        uint256 available = gasleft();
        if (available < required) revert InsufficientGasForReputation(available, required);
        bool ok;
        assembly ("memory-safe") {
            ok := call(REPUTATION_GAS, registry, 0, add(data, 0x20), mload(data), 0, 0)
        }
        if (ok) return;
        bytes memory reason;
        assembly ("memory-safe") {
            let size := returndatasize()
            if gt(size, MAX_REASON_BYTES) {
                size := MAX_REASON_BYTES
            }
            reason := mload(0x40)
            mstore(reason, size)
            returndatacopy(add(reason, 0x20), 0, size)
            mstore(0x40, add(add(reason, 0x20), and(add(size, 0x1f), not(0x1f))))
        }
        emit ReputationWriteFailed(taskHash, registry, reason);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc ITaskEscrow
    function getTask(bytes32 taskHash) external view returns (Task memory task) {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        PackedTask storage t = $.packedTasks[taskHash];
        uint32 deadline;
        uint32 phaseAt;
        task.poster = t.poster;
        if (task.poster != address(0)) {
            task.worker = t.worker;
            task.verifier = t.verifier;
            (task.token, task.amount) = _fundsOf($, t);
            uint8 state = t.state;
            task.status = Status(state & STATUS_MASK);
            task.ending = Ending(state >> STATUS_BITS);
            task.rounds = t.rounds;
            deadline = t.deadline;
            phaseAt = t.phaseAt;
        } else {
            // Funded before 3.0.0 and not moved yet (or never funded: all zero).
            TaskRecord storage legacy = $.tasks[taskHash];
            task.poster = legacy.poster;
            if (task.poster == address(0)) return task;
            task.worker = legacy.worker;
            task.verifier = legacy.verifier;
            task.token = legacy.token;
            task.amount = legacy.amount;
            task.status = legacy.status;
            task.ending = legacy.ending;
            task.rounds = legacy.rounds;
            deadline = legacy.deadline;
            phaseAt = legacy.phaseAt;
        }
        task.deadline = _toBlockTime($, deadline);
        if (task.status == Status.Failed) {
            task.windowEndsAt = _toBlockTime($, _max(phaseAt + APPEAL_WINDOW, deadline));
        } else if (task.status == Status.Disputed) {
            task.windowEndsAt = _toBlockTime($, _max(phaseAt + RULING_WINDOW, deadline));
        } else if (task.status == Status.Escalated) task.windowEndsAt = _toBlockTime($, phaseAt + RULING_WINDOW);
    }

    /// @inheritdoc ITaskEscrow
    function feeBps() external view returns (uint16) {
        return _getTaskEscrowStorage().feeBps;
    }

    /// @inheritdoc ITaskEscrow
    function admin() external view returns (address) {
        return _getTaskEscrowStorage().admin;
    }

    /// @inheritdoc ITaskEscrow
    function pendingAdmin() external view returns (address) {
        return _getTaskEscrowStorage().pendingAdmin;
    }

    /// @inheritdoc ITaskEscrow
    function verifier() external view returns (address) {
        return _getTaskEscrowStorage().verifier;
    }

    /// @inheritdoc ITaskEscrow
    function treasury() external view returns (address) {
        return _getTaskEscrowStorage().treasury;
    }

    /// @inheritdoc ITaskEscrow
    function maxBatch() external pure returns (uint256) {
        return MAX_BATCH;
    }

    /// @inheritdoc ITaskEscrow
    function version() external pure virtual returns (string memory) {
        return "4.0.0";
    }

    /// @inheritdoc ITaskEscrow
    function isAllowedToken(address token) external view returns (bool allowed) {
        (allowed, , ) = _ledgerView(_getTaskEscrowStorage(), token);
    }

    /// @inheritdoc ITaskEscrow
    function paused() external view returns (bool) {
        return _getTaskEscrowStorage().pausedAt != 0;
    }

    /// @inheritdoc ITaskEscrow
    function totalPaused() external view returns (uint64) {
        return _getTaskEscrowStorage().totalPaused;
    }

    /// @inheritdoc ITaskEscrow
    function escrowed(address token) external view returns (uint256 amount) {
        (, amount, ) = _ledgerView(_getTaskEscrowStorage(), token);
    }

    /// @inheritdoc ITaskEscrow
    function creditOf(address token, address account) external view returns (uint256) {
        return _getTaskEscrowStorage().credits[token][account];
    }

    /// @inheritdoc ITaskEscrow
    function totalCredited(address token) external view returns (uint256) {
        return _getTaskEscrowStorage().tokens[token].credited;
    }

    /// @inheritdoc ITaskEscrow
    function accruedFees(address token) external view returns (uint256) {
        return _getTaskEscrowStorage().ledgers[token].fees;
    }

    /// @inheritdoc ITaskEscrow
    function reputationRegistry() external view returns (address) {
        return _getTaskEscrowStorage().reputation;
    }

    /// @inheritdoc ITaskEscrow
    function reputationGasLimit() external pure returns (uint256) {
        return REPUTATION_GAS;
    }

    // ------------------------------------------------------------------ admin

    /// @inheritdoc ITaskEscrow
    function setFeeBps(uint16 newFeeBps) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        if (newFeeBps > MAX_FEE_BPS) revert FeeExceedsMax(newFeeBps, MAX_FEE_BPS);
        uint16 previous = $.feeBps;
        $.feeBps = newFeeBps;
        emit FeeUpdated(previous, newFeeBps);
    }

    /// @inheritdoc ITaskEscrow
    function setTreasury(address newTreasury) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        if (newTreasury == address(0)) revert ZeroAddress();
        address previous = $.treasury;
        $.treasury = newTreasury;
        emit TreasuryUpdated(previous, newTreasury);
    }

    /// @inheritdoc ITaskEscrow
    function setVerifier(address newVerifier) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        if (newVerifier == address(0)) revert ZeroAddress();
        address previous = $.verifier;
        $.verifier = newVerifier;
        emit VerifierUpdated(previous, newVerifier);
    }

    /// @inheritdoc ITaskEscrow
    function setAllowedToken(address token, bool allowed) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        if (token == address(0)) revert ZeroAddress();
        TokenLedger storage ledger = _ledger($, token);
        ledger.flags = allowed ? LEDGER_OPEN | LEDGER_ALLOWED : LEDGER_OPEN;
        emit TokenAllowed(token, allowed);
    }

    /// @inheritdoc ITaskEscrow
    function pause() external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        if ($.pausedAt != 0) revert EscrowPaused();
        $.pausedAt = SafeCast.toUint32(block.timestamp);
        emit EscrowPausedAt(uint64(block.timestamp));
    }

    /// @inheritdoc ITaskEscrow
    function unpause() external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        uint32 pausedAt = $.pausedAt;
        if (pausedAt == 0) revert EscrowNotPaused();
        // block time never goes back, so pausedFor >= 0
        uint32 pausedFor = SafeCast.toUint32(block.timestamp) - pausedAt;
        uint32 total = $.totalPaused + pausedFor;
        $.totalPaused = total;
        $.pausedAt = 0;
        emit EscrowUnpaused(pausedFor, total);
    }

    /// @inheritdoc ITaskEscrow
    function proposeAdmin(address newAdmin) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        $.pendingAdmin = newAdmin;
        emit AdminProposed($.admin, newAdmin);
    }

    /// @inheritdoc ITaskEscrow
    function acceptAdmin() external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        if (msg.sender != $.pendingAdmin) revert NotPendingAdmin(msg.sender);
        address previous = $.admin;
        $.admin = msg.sender;
        $.pendingAdmin = address(0);
        emit AdminTransferred(previous, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    function rescueSurplus(address token, address to, uint256 amount) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        if (to == address(0)) revert ZeroAddress();
        (, uint256 escrowed_, uint256 fees) = _ledgerView($, token);
        uint256 owed = escrowed_ + fees + $.tokens[token].credited;
        uint256 balance = IERC20(token).balanceOf(address(this));
        uint256 surplus = balance > owed ? balance - owed : 0;
        if (amount > surplus) revert RescueExceedsSurplus(token, amount, surplus);
        IERC20(token).safeTransfer(to, amount);
        emit SurplusRescued(token, to, amount);
    }

    /// @inheritdoc ITaskEscrow
    function setReputationRegistry(address registry) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        address previous = $.reputation;
        $.reputation = registry;
        $.settings =
            registry == address(0) ? $.settings | NO_REPUTATION_REGISTRY : $.settings & ~NO_REPUTATION_REGISTRY;
        emit ReputationRegistryUpdated(previous, registry);
    }

    /// @dev Only the admin upgrades, with no delay.
    function _authorizeUpgrade(address) internal view override {
        _onlyAdmin(_getTaskEscrowStorage());
    }

    // ------------------------------------------------------------------ internals

    function _onlyAdmin(TaskEscrowStorage storage $) private view {
        if (msg.sender != $.admin) revert NotAdmin(msg.sender);
    }

    /// @dev The task, wherever it was funded: a task funded before 3.0.0 is moved from `tasks` to `packedTasks` at its
    /// first transition since the upgrade (a call that then reverts moves nothing), so the rules above run on one
    /// layout and a task lives in exactly one mapping. Reverts {TaskNotFound} when neither holds it.
    function _task(TaskEscrowStorage storage $, bytes32 taskHash) private returns (PackedTask storage t) {
        t = $.packedTasks[taskHash];
        if (t.poster == address(0)) _moveLegacy($, taskHash, t);
    }

    /// @dev Copies a task funded before 3.0.0 into `t` field by field (poster, token, amount, deadline, status, ending,
    /// rounds, worker, phase time, verifier agent: nothing about it changes), then deletes its old record. Who assigned
    /// its worker was not recorded before 3.0.0, so the marketplace does not vouch for its outcome ({_vouched}).
    function _moveLegacy(TaskEscrowStorage storage $, bytes32 taskHash, PackedTask storage t) private {
        TaskRecord storage legacy = $.tasks[taskHash];
        address poster = legacy.poster;
        if (poster == address(0)) revert TaskNotFound(taskHash);
        address token = legacy.token;
        TokenLedger storage ledger = _ledger($, token);
        uint8 tokenId = ledger.id;
        if (tokenId == 0) ledger.id = tokenId = _newTokenId($, token);
        _storeFunding(t, poster, token, tokenId, legacy.amount, legacy.deadline);
        t.state = _state(legacy.status, legacy.ending);
        t.rounds = legacy.rounds;
        address worker = legacy.worker;
        address agent = legacy.verifier;
        if (worker != address(0)) {
            t.worker = worker;
            if (agent != address(0)) t.flags = JUDGED_BY_AGENT;
        }
        uint32 phaseAt = legacy.phaseAt;
        if (phaseAt != 0) t.phaseAt = phaseAt;
        if (agent != address(0)) t.verifier = agent;
        delete $.tasks[taskHash];
    }

    /// @dev The task's token and amount, from slot 0 and the token's id, or from slot 3.
    function _fundsOf(
        TaskEscrowStorage storage $,
        PackedTask storage t
    ) private view returns (address token, uint256 amount) {
        uint8 tokenId = t.tokenId;
        if (tokenId == 0) return (t.wideToken, t.wideAmount);
        return ($.tokensById[tokenId], t.amount);
    }

    /// @dev Slot 0's state (Submitted) and rounds in one write: bits 232 and 240 of it, as {_storeFunding} lays it out
    /// (the compiler would store each field with a read and a write of its own).
    function _submitted(PackedTask storage t, uint8 rounds) private {
        assembly ("memory-safe") {
            let slot := t.slot
            let kept := and(sload(slot), not(shl(232, 0xffff)))
            sstore(slot, or(kept, or(shl(232, 2), shl(240, rounds)))) // 2: Status.Submitted
        }
    }

    function _status(PackedTask storage t) private view returns (Status) {
        return Status(t.state & STATUS_MASK);
    }

    /// @dev `state` of an ended task: its Status and its Ending in one byte (both enums have fewer than 16 values).
    function _state(Status status, Ending ending) private pure returns (uint8) {
        return uint8(status) | (uint8(ending) << STATUS_BITS);
    }

    /// @dev Who may judge: the task's verifier agent, else the marketplace verifier. Once a worker is assigned, slot 1's
    /// JUDGED_BY_AGENT says whether there is an agent, so the marketplace verifier's verdicts skip reading slot 2.
    function _judge(TaskEscrowStorage storage $, PackedTask storage t) private view returns (address judge) {
        if (t.worker == address(0) || t.flags & JUDGED_BY_AGENT != 0) judge = t.verifier;
        if (judge == address(0)) judge = $.verifier;
    }

    /// @dev The registry settlements write, or zero: without reading its slot when `settings` says none is set. A proxy
    /// upgraded without a registry learns it at its first such read, once (a write of the slot 0 just read).
    function _registry(TaskEscrowStorage storage $) private returns (address registry) {
        uint8 settings = $.settings;
        if (settings & NO_REPUTATION_REGISTRY != 0) return address(0);
        registry = $.reputation;
        if (registry == address(0)) $.settings = settings | NO_REPUTATION_REGISTRY;
    }

    function _requireLive(TaskEscrowStorage storage $) private view {
        if ($.pausedAt != 0) revert EscrowPaused();
    }

    /// @dev Reverts while paused; otherwise the escrow clock: block time minus every finished pause.
    function _clockWhenLive(TaskEscrowStorage storage $) private view returns (uint32) {
        return _clockOf(_liveSlot0($));
    }

    /// @dev Slot 0 of the namespace as one word, read once (the compiler would read it for each field); reverts while
    /// paused. It holds the verifier at bit 0, the fee at 160, `pausedAt` at 176, `totalPaused` at 208 and `settings`
    /// at 240; test/escrow/pause.test.ts and the property test hold these reads to the layout.
    function _liveSlot0(TaskEscrowStorage storage $) private view returns (uint256 slot0) {
        assembly ("memory-safe") {
            slot0 := sload($.slot)
        }
        if (uint32(slot0 >> 176) != 0) revert EscrowPaused();
    }

    /// @dev The escrow clock from slot 0 ({_liveSlot0}).
    function _clockOf(uint256 slot0) private view returns (uint32) {
        // totalPaused only sums past intervals of block time, so it never exceeds block.timestamp
        unchecked {
            return SafeCast.toUint32(block.timestamp) - uint32(slot0 >> 208);
        }
    }

    /// @dev Projects an escrow-clock reading onto block time, counting every pause so far (the current one included).
    function _toBlockTime(TaskEscrowStorage storage $, uint32 clockTime) private view returns (uint64) {
        uint64 shift = $.totalPaused;
        uint32 pausedAt = $.pausedAt;
        if (pausedAt != 0) shift += uint64(block.timestamp) - pausedAt;
        return uint64(clockTime) + shift;
    }

    function _requireWindowPassed(
        TaskEscrowStorage storage $,
        bytes32 taskHash,
        uint32 clock,
        uint32 opensAt
    ) private view {
        if (clock < opensAt) revert WindowStillOpen(taskHash, _toBlockTime($, opensAt));
    }

    function _max(uint32 a, uint32 b) private pure returns (uint32) {
        return a > b ? a : b;
    }
}
