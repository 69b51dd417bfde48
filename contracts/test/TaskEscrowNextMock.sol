// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {TaskEscrow} from "../TaskEscrow.sol";

/// @notice Upgrade test: a later version (5.x) that appends storage in a namespace of its own and keeps every task.
/// @custom:oz-upgrades-from contracts/TaskEscrow.sol:TaskEscrow
contract TaskEscrowNextMock is TaskEscrow {
    /// @custom:storage-location erc7201:market.storage.TaskEscrowV3Mock
    struct TaskEscrowNextMockStorage {
        uint256 upgradeNote;
    }

    // keccak256(abi.encode(uint256(keccak256("market.storage.TaskEscrowV3Mock")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant V3_STORAGE_LOCATION = 0xd367a8c9753a3b6a21cd352a2d94a93f192c6b5489c99ecf8d6e12e5461b6c00;

    function _getV3Storage() private pure returns (TaskEscrowNextMockStorage storage $) {
        assembly {
            $.slot := V3_STORAGE_LOCATION
        }
    }

    function setUpgradeNote(uint256 note) external {
        _getV3Storage().upgradeNote = note;
    }

    function upgradeNote() external view returns (uint256) {
        return _getV3Storage().upgradeNote;
    }

    function version() external pure override returns (string memory) {
        return "5.0.0-mock";
    }
}
