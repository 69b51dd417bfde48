// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";

/// @notice Test token that calls back into the escrow from inside every transfer, as a token with transfer hooks
/// could: it records what the escrow's books said at that moment and how the call back ended, then lets the transfer
/// go through.
contract ReentrantToken is ERC20 {
    /// @notice The escrow to call back; zero disarms the hook.
    address public escrow;
    /// @notice Calldata of the call back.
    bytes public payload;
    /// @notice `escrow.escrowed(this)` read during the latest transfer.
    uint256 public escrowedSeen;
    bool public callBackSucceeded;
    /// @notice Revert data of the latest call back.
    bytes public callBackRevert;

    constructor() ERC20("Reentrant USD", "RUSD") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function arm(address escrow_, bytes calldata payload_) external {
        escrow = escrow_;
        payload = payload_;
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (escrow == address(0) || from == address(0)) return;
        escrowedSeen = ITaskEscrow(escrow).escrowed(address(this));
        (callBackSucceeded, callBackRevert) = escrow.call(payload);
    }
}
