// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IAgentIdentity
/// @notice Identity NFTs of agents, compatible with the ERC-8004 ("Trustless Agents") v1.0 IdentityRegistry: an
/// ERC-721 whose token id is the agent id and whose token URI is the agent URI (the agent card), with string-keyed
/// on-chain metadata and the reserved `agentWallet` entry. Adds a minter role that registers agents for their owners.
/// @dev The token controls nothing in the marketplace: no contract or check reads it. Entries the marketplace writes:
/// `agentWallet` (20 bytes, the agent's own address) and `metadataHash` (32 bytes, SHA-256 of the agent wallet address
/// followed by the agent's public key).
interface IAgentIdentity {
    /// @notice One metadata entry of {register} and {registerFor}, as ERC-8004 names it.
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    // ------------------------------------------------------------------ errors

    /// @notice The caller is neither the agent's owner nor an operator the owner approved.
    error NotAgentOperator(uint256 agentId, address caller);
    /// @notice `agentWallet` is set only through {setAgentWallet} (or by the minter in {registerFor}).
    error ReservedMetadataKey(string metadataKey);
    /// @notice A metadata key must not be empty.
    error EmptyMetadataKey();
    /// @notice An `agentWallet` value must be a non-zero address of exactly 20 bytes.
    error InvalidAgentWallet(bytes metadataValue);
    /// @notice An address argument must not be zero.
    error ZeroAddress();
    /// @notice The wallet's signature expired at `deadline`.
    error AgentWalletSignatureExpired(uint256 deadline);
    /// @notice A wallet signature may be valid for at most 5 minutes from now (`latest`).
    error AgentWalletDeadlineTooFar(uint256 deadline, uint256 latest);
    /// @notice The signature is not `newWallet`'s (EIP-712 for an EOA, ERC-1271 for a contract).
    error InvalidAgentWalletSignature(uint256 agentId, address newWallet);

    // ------------------------------------------------------------------ events (ERC-8004)

    /// @notice An agent was registered: `agentId` minted to `owner` with `agentURI`.
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
    /// @notice A metadata entry was set (also `agentWallet`, and its clearing to empty on transfer).
    event MetadataSet(
        uint256 indexed agentId,
        string indexed indexedMetadataKey,
        string metadataKey,
        bytes metadataValue
    );
    /// @notice The agent URI changed.
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    // ------------------------------------------------------------------ set-up

    /// @notice Initializes the proxy once; `admin` grants the minter role and upgrades.
    function initialize(address admin) external;

    // ------------------------------------------------------------------ registration (ERC-8004)

    /// @notice Registers an agent owned by the caller, with `agentURI` and metadata; `agentWallet` starts as the caller.
    function register(string calldata agentURI, MetadataEntry[] calldata metadata) external returns (uint256 agentId);

    /// @notice Registers an agent owned by the caller, with `agentURI`; `agentWallet` starts as the caller.
    function register(string calldata agentURI) external returns (uint256 agentId);

    /// @notice Registers an agent owned by the caller; the URI is set later with {setAgentURI}.
    function register() external returns (uint256 agentId);

    /// @notice The minter registers an agent for `owner` (the token goes to `owner`). Unlike {register}, the metadata
    /// may name the `agentWallet` (the agent's own address); without it the wallet starts as `owner`.
    function registerFor(
        address owner,
        string calldata agentURI,
        MetadataEntry[] calldata metadata
    ) external returns (uint256 agentId);

    // ------------------------------------------------------------------ updates (ERC-8004; owner or operator)

    /// @notice Changes the agent URI.
    function setAgentURI(uint256 agentId, string calldata newURI) external;

    /// @notice Sets one metadata entry; `agentWallet` is refused.
    function setMetadata(uint256 agentId, string calldata metadataKey, bytes calldata metadataValue) external;

    /// @notice Sets the agent wallet to `newWallet`, which proves control with an EIP-712 `AgentWalletSet` signature
    /// (or ERC-1271) valid until `deadline` (at most 5 minutes ahead).
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external;

    /// @notice Clears the agent wallet.
    function unsetAgentWallet(uint256 agentId) external;

    // ------------------------------------------------------------------ views

    /// @notice The metadata entry `metadataKey` of the agent; empty when not set.
    function getMetadata(uint256 agentId, string calldata metadataKey) external view returns (bytes memory);

    /// @notice The agent wallet; zero when cleared (every transfer clears it).
    function getAgentWallet(uint256 agentId) external view returns (address);

    /// @notice The agent that most recently took `wallet` as its agent wallet and still holds it; 0 when none.
    function agentIdOfWallet(address wallet) external view returns (uint256);

    /// @notice Number of agents registered; agent ids run from 1 to this.
    function lastAgentId() external view returns (uint256);

    /// @notice Whether `owner` or an operator it approved may update the agent (reverts for an unknown agent).
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);

    function version() external pure returns (string memory);
}
