// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice Test token that refuses transfers to blocked accounts, as USDC does for blacklisted addresses.
contract BlocklistToken is ERC20 {
    mapping(address account => bool) public blocked;

    error AccountBlocked(address account);

    constructor() ERC20("Blocklist USD", "BUSD") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function setBlocked(address account, bool isBlocked) external {
        blocked[account] = isBlocked;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (blocked[to]) revert AccountBlocked(to);
        super._update(from, to, value);
    }
}
