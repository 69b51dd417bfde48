// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {TaskEscrow} from "../TaskEscrow.sol";

/// @notice Upgrade test: a later version that appends storage in a namespace of its own and keeps every task.
/// @custom:oz-upgrades-from contracts/TaskEscrow.sol:TaskEscrow
contract TaskEscrowV2Mock is TaskEscrow {
    /// @custom:storage-location erc7201:market.storage.TaskEscrowV2Mock
    struct TaskEscrowV2MockStorage {
        uint256 upgradeNote;
    }

    // keccak256(abi.encode(uint256(keccak256("market.storage.TaskEscrowV2Mock")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant V2_STORAGE_LOCATION = 0xd088f4bf95004987fa922c8cf928848dee7d442feb7ddd33234277137c878b00;

    function _getV2Storage() private pure returns (TaskEscrowV2MockStorage storage $) {
        assembly {
            $.slot := V2_STORAGE_LOCATION
        }
    }

    function setUpgradeNote(uint256 note) external {
        _getV2Storage().upgradeNote = note;
    }

    function upgradeNote() external view returns (uint256) {
        return _getV2Storage().upgradeNote;
    }

    function version() external pure override returns (string memory) {
        return "2.0.0-mock";
    }
}
