// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @notice Test registry with {ITaskReputation}'s write functions that fails in the way it is told to, to prove a
/// registry never blocks or changes a settlement.
contract MisbehavingReputation {
    enum Mode {
        Revert, // reverts with Refused(agent, taskHash)
        BurnGas, // spins until its gas runs out
        HugeRevert, // reverts with 100,000 bytes of data
        CallBack // calls back into the escrow with `payload`, and reverts with what came back
    }

    Mode public mode;
    address public escrow;
    bytes public payload;

    error Refused(address agent, bytes32 taskHash);

    function setMode(Mode mode_) external {
        mode = mode_;
    }

    function arm(address escrow_, bytes calldata payload_) external {
        mode = Mode.CallBack;
        escrow = escrow_;
        payload = payload_;
    }

    function recordCompletion(address agent, bytes32 taskHash, bool, uint8) external {
        _misbehave(agent, taskHash);
    }

    function recordDispute(address agent, bytes32 taskHash) external {
        _misbehave(agent, taskHash);
    }

    function _misbehave(address agent, bytes32 taskHash) private {
        Mode current = mode;
        if (current == Mode.Revert) revert Refused(agent, taskHash);
        if (current == Mode.BurnGas) {
            uint256 spins;
            while (true) {
                unchecked {
                    ++spins;
                }
            }
        }
        if (current == Mode.HugeRevert) {
            assembly {
                revert(0, 100000)
            }
        }
        (, bytes memory answer) = escrow.call(payload);
        assembly {
            revert(add(answer, 0x20), mload(answer))
        }
    }
}
