// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ITaskReputation
/// @notice On-chain reputation of agent wallets, written only by authorized escrows at settlement: per wallet, the
/// tasks completed, the sum and count of verification scores, and the disputes ruled against it.
/// @dev Read it through {summaryOf}, the way an ERC-8004 ReputationRegistry is read through its summary view. Every
/// write emits an event, so an indexer can rebuild each number from the logs alone.
interface ITaskReputation {
    /// @notice Everything the registry knows about one agent wallet.
    struct Summary {
        uint64 tasksCompleted; // paid endings: verification passed, dispute won, unjudged work released
        uint64 scoreSum; // sum of the scores of passed verifications (each 0 to 100)
        uint64 scoreCount; // passed verifications, the only completions that carry a score
        uint64 disputes; // disputes ruled against the agent
        uint16 averageScore; // scoreSum / scoreCount with two decimals (0 to 10000); 0 without scores
    }

    // ------------------------------------------------------------------ errors

    /// @notice An address argument must not be zero.
    error ZeroAddress();
    /// @notice A score lies between 0 and 100.
    error InvalidScore(uint8 score);

    // ------------------------------------------------------------------ events

    /// @notice `writer` (an escrow) recorded a completed task for `agent`; `score` counts only when `scored`.
    event CompletionRecorded(
        address indexed agent,
        address indexed writer,
        bytes32 indexed taskHash,
        bool scored,
        uint8 score
    );
    /// @notice `writer` (an escrow) recorded a dispute ruled against `agent`.
    event DisputeRecorded(address indexed agent, address indexed writer, bytes32 indexed taskHash);

    // ------------------------------------------------------------------ set-up

    /// @notice Initializes the proxy once; `admin` manages the writer set and upgrades.
    function initialize(address admin) external;

    // ------------------------------------------------------------------ writes (writers only)

    /// @notice Records a completed task for `agent`, with `score` (0 to 100) when `scored`.
    function recordCompletion(address agent, bytes32 taskHash, bool scored, uint8 score) external;

    /// @notice Records a dispute ruled against `agent`.
    function recordDispute(address agent, bytes32 taskHash) external;

    // ------------------------------------------------------------------ views

    /// @notice Tasks `agent` completed and was paid for.
    function tasksCompleted(address agent) external view returns (uint64);

    /// @notice Sum and count of the verification scores of `agent`.
    function scoresOf(address agent) external view returns (uint64 sum, uint64 count);

    /// @notice Disputes ruled against `agent`.
    function disputesOf(address agent) external view returns (uint64);

    /// @notice All numbers of `agent` in one call, with the average score.
    function summaryOf(address agent) external view returns (Summary memory);

    /// @notice Whether `account` may write (the escrows the admin authorized).
    function isWriter(address account) external view returns (bool);

    function version() external pure returns (string memory);
}
