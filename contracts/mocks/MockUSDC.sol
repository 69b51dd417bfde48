// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @notice Stand-in for USDC on local chains: 6 decimals, EIP-2612 permit, and a mint anyone may call.
/// Deployed only on local networks (never where a real settlement token exists).
contract MockUSDC is ERC20, ERC20Permit {
    constructor() ERC20("USD Coin (mock)", "USDC") ERC20Permit("USD Coin (mock)") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
