// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {AccessControlUpgradeable} from "@openzeppelin/contracts-upgradeable/access/AccessControlUpgradeable.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ITaskReputation} from "../interfaces/ITaskReputation.sol";

/// @title TaskReputation
/// @notice UUPS-upgradeable reputation of agent wallets, written by the escrows the admin authorized. See
/// {ITaskReputation}.
/// @dev Roles: `DEFAULT_ADMIN_ROLE` grants and revokes `WRITER_ROLE` (the writer set) and upgrades. A write costs one
/// storage slot per agent: the escrow gives each write a fixed gas budget, so a write must stay small.
/// @custom:security-contact security@market.example
contract TaskReputation is ITaskReputation, Initializable, UUPSUpgradeable, AccessControlUpgradeable {
    /// @notice Role of the escrows allowed to write.
    bytes32 public constant WRITER_ROLE = keccak256("WRITER_ROLE");

    uint256 private constant MAX_SCORE = 100;

    /// @dev One agent in one slot. Each counter grows by at most 100 per write, and every write is a transaction of
    /// over 20,000 gas: 2^64 is out of reach, so the increments below are unchecked.
    struct AgentRecord {
        uint64 tasksCompleted;
        uint64 scoreSum;
        uint64 scoreCount;
        uint64 disputes;
    }

    /// @custom:storage-location erc7201:market.storage.TaskReputation
    struct TaskReputationStorage {
        mapping(address agent => AgentRecord) agents;
    }

    // keccak256(abi.encode(uint256(keccak256("market.storage.TaskReputation")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant TASK_REPUTATION_STORAGE_LOCATION =
        0x7712f3be6bce5c44d42ae404d19715eaff6421aa5d418c9cb955b788748b4900;

    function _getTaskReputationStorage() private pure returns (TaskReputationStorage storage $) {
        assembly {
            $.slot := TASK_REPUTATION_STORAGE_LOCATION
        }
    }

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @inheritdoc ITaskReputation
    function initialize(address admin) external initializer {
        if (admin == address(0)) revert ZeroAddress();
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
    }

    // ------------------------------------------------------------------ writes

    /// @inheritdoc ITaskReputation
    function recordCompletion(
        address agent,
        bytes32 taskHash,
        bool scored,
        uint8 score
    ) external onlyRole(WRITER_ROLE) {
        if (agent == address(0)) revert ZeroAddress();
        if (score > MAX_SCORE) revert InvalidScore(score);
        AgentRecord storage record = _getTaskReputationStorage().agents[agent];
        // see AgentRecord
        unchecked {
            record.tasksCompleted += 1;
            if (scored) {
                record.scoreSum += score;
                record.scoreCount += 1;
            }
        }
        emit CompletionRecorded(agent, msg.sender, taskHash, scored, score);
    }

    /// @inheritdoc ITaskReputation
    function recordDispute(address agent, bytes32 taskHash) external onlyRole(WRITER_ROLE) {
        if (agent == address(0)) revert ZeroAddress();
        // see AgentRecord
        unchecked {
            _getTaskReputationStorage().agents[agent].disputes += 1;
        }
        emit DisputeRecorded(agent, msg.sender, taskHash);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc ITaskReputation
    function tasksCompleted(address agent) external view returns (uint64) {
        return _getTaskReputationStorage().agents[agent].tasksCompleted;
    }

    /// @inheritdoc ITaskReputation
    function scoresOf(address agent) external view returns (uint64 sum, uint64 count) {
        AgentRecord storage record = _getTaskReputationStorage().agents[agent];
        return (record.scoreSum, record.scoreCount);
    }

    /// @inheritdoc ITaskReputation
    function disputesOf(address agent) external view returns (uint64) {
        return _getTaskReputationStorage().agents[agent].disputes;
    }

    /// @inheritdoc ITaskReputation
    function summaryOf(address agent) external view returns (Summary memory summary) {
        AgentRecord memory record = _getTaskReputationStorage().agents[agent];
        summary.tasksCompleted = record.tasksCompleted;
        summary.scoreSum = record.scoreSum;
        summary.scoreCount = record.scoreCount;
        summary.disputes = record.disputes;
        // an average of scores of at most 100, times 100, is at most 10000
        if (record.scoreCount != 0) {
            summary.averageScore = SafeCast.toUint16((uint256(record.scoreSum) * 100) / record.scoreCount);
        }
    }

    /// @inheritdoc ITaskReputation
    function isWriter(address account) external view returns (bool) {
        return hasRole(WRITER_ROLE, account);
    }

    /// @inheritdoc ITaskReputation
    function version() external pure returns (string memory) {
        return "1.0.0";
    }

    /// @dev Only the admin upgrades.
    function _authorizeUpgrade(address) internal view override onlyRole(DEFAULT_ADMIN_ROLE) {}
}
