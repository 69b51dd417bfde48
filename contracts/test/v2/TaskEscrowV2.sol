// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ITaskEscrowV3 as ITaskEscrow} from "../v3/ITaskEscrowV3.sol";
import {ITaskReputation} from "../../interfaces/ITaskReputation.sol";

/// @title TaskEscrowV2
/// @notice TaskEscrow 2.0.0 as deployed before 3.0.0, kept to deploy a 2.0.0 proxy in the upgrade and fork tests and
/// to check a deployed 2.0.0 implementation before upgrading it (deploy/escrow.ts). Never deployed anew elsewhere.
/// @dev UUPS-upgradeable escrow of task rewards. See {ITaskEscrow}.
/// Time runs on an escrow clock (block time minus the time spent paused), so a pause extends every live deadline
/// and window in O(1): stored times are clock readings, and views project them back onto block time.
/// 2.0.0 (upgrade of 1.0.0, storage appended): credits go only to the credited account; settlements write the optional
/// reputation registry under a fixed gas budget (see {_recordReputation}).
/// @custom:oz-upgrades-from contracts/test/v1/TaskEscrowV1.sol:TaskEscrowV1
/// @custom:security-contact security@market.example
contract TaskEscrowV2 is ITaskEscrow, Initializable, UUPSUpgradeable, ReentrancyGuardTransient {
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

    /// @dev One task in four slots: slots 0 and 1 are written at funding, slot 3 too when there is a verifier agent.
    /// Times are escrow-clock seconds: uint32 lasts until 2106, and the clock never runs ahead of block time.
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

    /// @dev Per-token book in one slot: whether new tasks may use it, and what the escrow owes in it.
    struct TokenBook {
        bool allowed;
        uint128 escrowed; // sum of live task amounts
        uint120 credited; // sum of credits not yet withdrawn
    }

    /// @custom:storage-location erc7201:market.storage.TaskEscrow
    struct TaskEscrowStorage {
        // slot 0: read by nearly every call
        address verifier;
        uint16 feeBps;
        uint32 pausedAt; // block time the current pause began; 0 when not paused
        uint32 totalPaused; // seconds of every finished pause
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
        $.tokens[token_].allowed = true;
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
        uint32 clock = _clockWhenLive($);
        TokenBook storage book = _allowedBook($, token);
        _recordTask($, clock, taskHash, token, amount, duration, verifier_);
        // Booked before the transfer (checks-effects-interactions); a short delivery reverts it all.
        book.escrowed += SafeCast.toUint128(amount);
        _pull(token, amount);
    }

    function _createTasks(CreateParams[] calldata tasks) private {
        uint256 count = tasks.length;
        if (count == 0 || count > MAX_BATCH) revert InvalidBatchSize(count, MAX_BATCH);
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        address token = tasks[0].token;
        TokenBook storage book = _allowedBook($, token);
        uint256 total;
        for (uint256 i; i < count; ++i) {
            CreateParams calldata p = tasks[i];
            if (p.token != token) revert BatchTokenMismatch(i, p.token, token);
            _recordTask($, clock, p.taskHash, token, p.amount, p.duration, p.verifier);
            // Each amount was checked below 2^96 in _recordTask, and there are at most 20: no overflow.
            unchecked {
                total += p.amount;
            }
        }
        book.escrowed += SafeCast.toUint128(total);
        _pull(token, total);
    }

    function _recordTask(
        TaskEscrowStorage storage $,
        uint32 clock,
        bytes32 taskHash,
        address token,
        uint256 amount,
        uint64 duration,
        address verifier_
    ) private {
        if (taskHash == bytes32(0)) revert ZeroTaskHash();
        if (amount == 0) revert ZeroAmount();
        if (amount > type(uint96).max) revert AmountTooLarge(amount, type(uint96).max);
        if (duration < MIN_DURATION || duration > MAX_DURATION) revert InvalidDuration(duration);
        if (verifier_ == msg.sender) revert VerifierIsPoster(verifier_);
        TaskRecord storage t = $.tasks[taskHash];
        if (t.poster != address(0)) revert TaskHashUsed(taskHash);

        t.token = token;
        t.amount = uint96(amount); // checked above
        t.poster = msg.sender;
        // duration <= 90 days, checked above; the sum is checked and overflows only after the year 2106
        t.deadline = clock + uint32(duration);
        if (verifier_ != address(0)) t.verifier = verifier_;
        // Not paused here, so block time and the projected deadline agree.
        emit TaskCreated(taskHash, msg.sender, token, amount, uint64(block.timestamp) + duration, verifier_);
    }

    /// @dev A permit failure is ignored on purpose: a front-runner may have spent the permit already, and the
    /// transfer below still fails if the allowance is missing. A token the escrow does not take is not called at all:
    /// the funding fails with {TokenNotAllowed}, and a call to an address without code (`address(0)`) would revert
    /// before try/catch could catch it.
    function _permit(address token, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) private {
        if (!_getTaskEscrowStorage().tokens[token].allowed) return;
        try IERC20Permit(token).permit(msg.sender, address(this), value, deadline, v, r, s) {} catch {}
    }

    function _pull(address token, uint256 amount) private {
        uint256 before = IERC20(token).balanceOf(address(this));
        IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        uint256 received = IERC20(token).balanceOf(address(this)) - before;
        if (received < amount) revert TokenDeliveredLess(token, amount, received);
    }

    // ------------------------------------------------------------------ life cycle

    /// @inheritdoc ITaskEscrow
    function cancelTask(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _requireLive($);
        TaskRecord storage t = _task($, taskHash);
        if (msg.sender != t.poster) revert NotPoster(taskHash, msg.sender);
        if (t.status != Status.Funded) revert InvalidStatus(taskHash, t.status);
        uint256 refund = _refundPoster($, t, Status.Cancelled, Ending.CancelledWhileOpen);
        emit TaskCancelled(taskHash, t.poster, refund, Ending.CancelledWhileOpen);
    }

    /// @inheritdoc ITaskEscrow
    function assignWorker(bytes32 taskHash, address worker) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        TaskRecord storage t = _task($, taskHash);
        if (msg.sender != t.poster) revert NotPoster(taskHash, msg.sender);
        _assign($, taskHash, t, worker);
    }

    /// @inheritdoc ITaskEscrow
    function marketplaceAssign(bytes32 taskHash, address worker) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        if (msg.sender != $.verifier) revert NotMarketplaceVerifier(msg.sender);
        _assign($, taskHash, _task($, taskHash), worker);
    }

    function _assign(TaskEscrowStorage storage $, bytes32 taskHash, TaskRecord storage t, address worker) private {
        uint32 clock = _clockWhenLive($);
        if (t.status != Status.Funded) revert InvalidStatus(taskHash, t.status);
        if (clock >= t.deadline) revert DeadlinePassed(taskHash, _toBlockTime($, t.deadline));
        // The marketplace verifier never works a task: it judges every task without a verifier agent.
        if (worker == address(0) || worker == t.poster || worker == t.verifier || worker == $.verifier) {
            revert InvalidWorker(taskHash, worker);
        }
        t.worker = worker;
        t.status = Status.Assigned;
        emit WorkerAssigned(taskHash, worker, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    function releaseTask(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _requireLive($);
        TaskRecord storage t = _task($, taskHash);
        if (msg.sender != t.worker) revert NotWorker(taskHash, msg.sender);
        // Assigned means no round was delivered yet: nothing the task holds belongs to this worker.
        if (t.status != Status.Assigned) revert InvalidStatus(taskHash, t.status);
        t.status = Status.Funded;
        t.worker = address(0);
        emit WorkerReleased(taskHash, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    /// @dev No reentrancy guard: it calls out to nothing and writes only its own task's record, so a call from inside
    /// another call's token transfer finds a closed task refused (InvalidStatus) like any later call. Saves ~490 gas.
    function submitEvidence(bytes32 taskHash, bytes32 resultHash) external {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        TaskRecord storage t = _task($, taskHash);
        if (msg.sender != t.worker) revert NotWorker(taskHash, msg.sender);
        Status status = t.status;
        if (status != Status.Assigned && status != Status.Failed) revert InvalidStatus(taskHash, status);
        if (clock >= t.deadline) revert DeadlinePassed(taskHash, _toBlockTime($, t.deadline));
        uint8 round = t.rounds;
        if (round >= MAX_ROUNDS) revert NoRoundsLeft(taskHash);
        if (resultHash == bytes32(0)) revert ZeroResultHash();
        // round < MAX_ROUNDS, checked above
        unchecked {
            ++round;
        }
        t.rounds = round;
        t.status = Status.Submitted;
        emit EvidenceSubmitted(taskHash, msg.sender, resultHash, round);
    }

    /// @inheritdoc ITaskEscrow
    function completeVerification(bytes32 taskHash, bool passed, uint8 score) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        TaskRecord storage t = _task($, taskHash);
        address judge = t.verifier;
        if (judge == address(0)) judge = $.verifier;
        if (msg.sender != judge) revert NotTaskVerifier(taskHash, msg.sender);
        if (t.status != Status.Submitted) revert InvalidStatus(taskHash, t.status);
        if (score > 100) revert InvalidScore(score);
        if (passed) {
            // Emitted before the payout so the ending event (TaskCompleted) stays the last of the transaction.
            emit VerificationCompleted(taskHash, msg.sender, true, score, t.rounds);
            _payWorker($, taskHash, t, Status.Verified, Ending.VerificationPassed, true, score);
        } else {
            t.status = Status.Failed;
            t.phaseAt = clock;
            emit VerificationCompleted(taskHash, msg.sender, false, score, t.rounds);
        }
    }

    /// @inheritdoc ITaskEscrow
    function raiseDispute(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        TaskRecord storage t = _task($, taskHash);
        Status status = t.status;
        if (status != Status.Assigned && status != Status.Submitted && status != Status.Failed) {
            revert InvalidStatus(taskHash, status);
        }
        bool beforeDeadline = clock < t.deadline;
        if (msg.sender == t.worker) {
            // The worker appeals a failed verdict within the appeal window, even past the deadline.
            if (status == Status.Failed) {
                uint32 appealEnd = t.phaseAt + APPEAL_WINDOW;
                if (!beforeDeadline && clock >= appealEnd) {
                    revert AppealWindowClosed(taskHash, _toBlockTime($, _max(appealEnd, t.deadline)));
                }
            } else if (!beforeDeadline) {
                revert DeadlinePassed(taskHash, _toBlockTime($, t.deadline));
            }
        } else if (msg.sender == t.poster) {
            if (!beforeDeadline) revert DeadlinePassed(taskHash, _toBlockTime($, t.deadline));
        } else {
            revert NotTaskParty(taskHash, msg.sender);
        }
        t.status = Status.Disputed;
        t.phaseAt = clock;
        emit DisputeRaised(taskHash, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    /// @dev Not held by the pause: rulings are how the admin unwinds an incident.
    function resolveDispute(bytes32 taskHash, bool workerWins) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        _onlyAdmin($);
        TaskRecord storage t = _task($, taskHash);
        if (t.status != Status.Disputed && t.status != Status.Escalated) revert InvalidStatus(taskHash, t.status);
        emit DisputeResolved(taskHash, workerWins);
        if (workerWins) {
            _payWorker($, taskHash, t, Status.Paid, Ending.DisputeWonByWorker, false, 0);
        } else {
            (address token, uint256 refund) = _close($, t, Status.Refunded, Ending.DisputeWonByPoster);
            address registry = $.reputation;
            if (registry != address(0)) {
                bytes memory write = abi.encodeCall(ITaskReputation.recordDispute, (t.worker, taskHash));
                _recordReputation(registry, taskHash, write);
            }
            _send($, token, t.poster, refund);
            emit TaskRefunded(taskHash, t.poster, refund, Ending.DisputeWonByPoster);
        }
    }

    /// @inheritdoc ITaskEscrow
    function claimTimeout(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        TaskRecord storage t = _task($, taskHash);
        if (msg.sender != t.poster) revert NotPoster(taskHash, msg.sender);
        if (clock < t.deadline) revert DeadlineNotReached(taskHash, _toBlockTime($, t.deadline));

        Status status = t.status;
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
            t.status = Status.Escalated;
            t.phaseAt = clock;
            emit UnjudgedWorkEscalated(taskHash, _toBlockTime($, clock + RULING_WINDOW));
            return;
        } else {
            revert InvalidStatus(taskHash, status);
        }
        uint256 refund = _refundPoster($, t, Status.Refunded, ending);
        emit DeadlineExpired(taskHash, t.poster, refund, ending);
    }

    /// @inheritdoc ITaskEscrow
    function releaseUnjudgedWork(bytes32 taskHash) external nonReentrant {
        TaskEscrowStorage storage $ = _getTaskEscrowStorage();
        uint32 clock = _clockWhenLive($);
        TaskRecord storage t = _task($, taskHash);
        if (msg.sender != t.worker) revert NotWorker(taskHash, msg.sender);
        if (t.status != Status.Escalated) revert InvalidStatus(taskHash, t.status);
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

    // ------------------------------------------------------------------ settlement

    /// @dev Ends the task: the fee, read now and rounded down, goes to the treasury and the rest to the worker. The
    /// completion is recorded (with `score` when `scored`) before the transfers, so the ending event stays last.
    function _payWorker(
        TaskEscrowStorage storage $,
        bytes32 taskHash,
        TaskRecord storage t,
        Status status,
        Ending ending,
        bool scored,
        uint8 score
    ) private {
        (address token, uint256 amount) = _close($, t, status, ending);
        address worker = t.worker;
        uint256 fee;
        uint256 payout;
        // amount < 2^96 and feeBps <= 3000: the product fits, and fee <= amount
        unchecked {
            fee = (amount * $.feeBps) / BPS;
            payout = amount - fee;
        }
        address registry = $.reputation;
        if (registry != address(0)) {
            _recordReputation(
                registry,
                taskHash,
                abi.encodeCall(ITaskReputation.recordCompletion, (worker, taskHash, scored, score))
            );
        }
        _send($, token, $.treasury, fee);
        _send($, token, worker, payout);
        emit TaskCompleted(taskHash, worker, payout, fee, ending);
    }

    /// @dev Ends the task with 100% back to the poster. The caller emits the ending event.
    function _refundPoster(
        TaskEscrowStorage storage $,
        TaskRecord storage t,
        Status status,
        Ending ending
    ) private returns (uint256 amount) {
        address token;
        (token, amount) = _close($, t, status, ending);
        _send($, token, t.poster, amount);
    }

    function _close(
        TaskEscrowStorage storage $,
        TaskRecord storage t,
        Status status,
        Ending ending
    ) private returns (address token, uint256 amount) {
        t.status = status;
        t.ending = ending;
        token = t.token;
        amount = t.amount;
        // a live task's amount is part of escrowed
        unchecked {
            $.tokens[token].escrowed -= uint128(amount);
        }
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
    /// and the encoding, when no registry is set: that costs one storage read). The call gets exactly REPUTATION_GAS,
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
        TaskRecord storage t = $.tasks[taskHash];
        task.poster = t.poster;
        if (task.poster == address(0)) return task;
        task.worker = t.worker;
        task.verifier = t.verifier;
        task.token = t.token;
        task.amount = t.amount;
        task.deadline = _toBlockTime($, t.deadline);
        task.status = t.status;
        task.rounds = t.rounds;
        task.ending = t.ending;
        if (task.status == Status.Failed) {
            task.windowEndsAt = _toBlockTime($, _max(t.phaseAt + APPEAL_WINDOW, t.deadline));
        } else if (task.status == Status.Disputed) {
            task.windowEndsAt = _toBlockTime($, _max(t.phaseAt + RULING_WINDOW, t.deadline));
        } else if (task.status == Status.Escalated) task.windowEndsAt = _toBlockTime($, t.phaseAt + RULING_WINDOW);
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
        return "2.0.0";
    }

    /// @inheritdoc ITaskEscrow
    function isAllowedToken(address token) external view returns (bool) {
        return _getTaskEscrowStorage().tokens[token].allowed;
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
    function escrowed(address token) external view returns (uint256) {
        return _getTaskEscrowStorage().tokens[token].escrowed;
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
        $.tokens[token].allowed = allowed;
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
        TokenBook storage book = $.tokens[token];
        uint256 owed = uint256(book.escrowed) + book.credited;
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

    function _task(TaskEscrowStorage storage $, bytes32 taskHash) private view returns (TaskRecord storage t) {
        t = $.tasks[taskHash];
        if (t.poster == address(0)) revert TaskNotFound(taskHash);
    }

    function _allowedBook(TaskEscrowStorage storage $, address token) private view returns (TokenBook storage book) {
        book = $.tokens[token];
        if (!book.allowed) revert TokenNotAllowed(token);
    }

    function _requireLive(TaskEscrowStorage storage $) private view {
        if ($.pausedAt != 0) revert EscrowPaused();
    }

    /// @dev Reverts while paused; otherwise the escrow clock: block time minus every finished pause.
    function _clockWhenLive(TaskEscrowStorage storage $) private view returns (uint32) {
        _requireLive($);
        // totalPaused only sums past intervals of block time, so it never exceeds block.timestamp
        unchecked {
            return SafeCast.toUint32(block.timestamp) - $.totalPaused;
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
