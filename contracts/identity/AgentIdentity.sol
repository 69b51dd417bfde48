// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {AccessControlUpgradeable} from "@openzeppelin/contracts-upgradeable/access/AccessControlUpgradeable.sol";
import {ERC721Upgradeable} from "@openzeppelin/contracts-upgradeable/token/ERC721/ERC721Upgradeable.sol";
import {ERC721URIStorageUpgradeable} from "@openzeppelin/contracts-upgradeable/token/ERC721/extensions/ERC721URIStorageUpgradeable.sol";
import {EIP712Upgradeable} from "@openzeppelin/contracts-upgradeable/utils/cryptography/EIP712Upgradeable.sol";
import {ERC721Utils} from "@openzeppelin/contracts/token/ERC721/utils/ERC721Utils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IAgentIdentity} from "../interfaces/IAgentIdentity.sol";

/// @title AgentIdentity
/// @notice UUPS-upgradeable identity NFTs of agents, ERC-8004 IdentityRegistry-compatible. See {IAgentIdentity}.
/// @dev Roles: `DEFAULT_ADMIN_ROLE` grants `MINTER_ROLE` and upgrades; `MINTER_ROLE` (the marketplace service)
/// registers agents for their owners with {registerFor}. Agent ids start at 1, so 0 means "no agent" in views and
/// off-chain records. Wallet signatures use the EIP-712 domain of the ERC-8004 reference registry
/// ("ERC8004IdentityRegistry", "1"), so tools that sign `AgentWalletSet` for it sign for this one too.
/// @custom:security-contact security@market.example
contract AgentIdentity is
    IAgentIdentity,
    Initializable,
    UUPSUpgradeable,
    ERC721URIStorageUpgradeable,
    AccessControlUpgradeable,
    EIP712Upgradeable
{
    /// @notice Role of the accounts that register agents for their owners.
    bytes32 public constant MINTER_ROLE = keccak256("MINTER_ROLE");

    string private constant AGENT_WALLET_KEY = "agentWallet";
    bytes32 private constant AGENT_WALLET_KEY_HASH = keccak256("agentWallet");
    bytes32 private constant AGENT_WALLET_SET_TYPEHASH = keccak256(
        "AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)"
    );
    uint256 private constant MAX_SIGNATURE_LIFETIME = 5 minutes;

    /// @custom:storage-location erc7201:market.storage.AgentIdentity
    struct AgentIdentityStorage {
        // slot 0
        uint256 lastAgentId;
        // slot 1; `agentWallet` is kept here too, as 20 bytes (or empty when cleared), so getMetadata reads it
        mapping(uint256 agentId => mapping(string metadataKey => bytes)) metadata;
        // slot 2
        mapping(address wallet => uint256 agentId) agentOfWallet;
    }

    // keccak256(abi.encode(uint256(keccak256("market.storage.AgentIdentity")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant AGENT_IDENTITY_STORAGE_LOCATION =
        0x8acc3040f035c0eaf7af92de5c2f86d70f05e8e573ae3ab23a128928e230e300;

    function _getAgentIdentityStorage() private pure returns (AgentIdentityStorage storage $) {
        assembly {
            $.slot := AGENT_IDENTITY_STORAGE_LOCATION
        }
    }

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @inheritdoc IAgentIdentity
    function initialize(address admin) external initializer {
        if (admin == address(0)) revert ZeroAddress();
        __ERC721_init("Market Agent Identity", "AGENT");
        __ERC721URIStorage_init();
        __AccessControl_init();
        __EIP712_init("ERC8004IdentityRegistry", "1");
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
    }

    // ------------------------------------------------------------------ registration

    /// @inheritdoc IAgentIdentity
    function register(string calldata agentURI, MetadataEntry[] calldata metadata) external returns (uint256 agentId) {
        return _register(msg.sender, agentURI, metadata, false);
    }

    /// @inheritdoc IAgentIdentity
    function register(string calldata agentURI) external returns (uint256 agentId) {
        return _register(msg.sender, agentURI, new MetadataEntry[](0), false);
    }

    /// @inheritdoc IAgentIdentity
    function register() external returns (uint256 agentId) {
        return _register(msg.sender, "", new MetadataEntry[](0), false);
    }

    /// @inheritdoc IAgentIdentity
    function registerFor(
        address owner,
        string calldata agentURI,
        MetadataEntry[] calldata metadata
    ) external onlyRole(MINTER_ROLE) returns (uint256 agentId) {
        return _register(owner, agentURI, metadata, true);
    }

    /// @dev Mints, then writes the URI and the metadata, and calls the owner's `onERC721Received` last, so a contract
    /// owner sees a complete agent and a refusal undoes the whole registration.
    function _register(
        address owner,
        string memory agentURI,
        MetadataEntry[] memory metadata,
        bool mayNameWallet
    ) private returns (uint256 agentId) {
        if (owner == address(0)) revert ZeroAddress();
        AgentIdentityStorage storage $ = _getAgentIdentityStorage();
        address wallet = owner;
        for (uint256 i; i < metadata.length; ++i) {
            if (_isAgentWalletKey(metadata[i].metadataKey)) {
                if (!mayNameWallet) revert ReservedMetadataKey(metadata[i].metadataKey);
                wallet = _walletFrom(metadata[i].metadataValue);
            }
        }
        // one id per registration transaction: 2^256 cannot be reached
        unchecked {
            agentId = ++$.lastAgentId;
        }
        _mint(owner, agentId);
        if (bytes(agentURI).length != 0) _setTokenURI(agentId, agentURI);
        emit Registered(agentId, agentURI, owner);
        _setWallet($, agentId, wallet);
        for (uint256 i; i < metadata.length; ++i) {
            MetadataEntry memory entry = metadata[i];
            if (_isAgentWalletKey(entry.metadataKey)) continue;
            _setMetadata($, agentId, entry.metadataKey, entry.metadataValue);
        }
        ERC721Utils.checkOnERC721Received(msg.sender, address(0), owner, agentId, "");
    }

    // ------------------------------------------------------------------ updates

    /// @inheritdoc IAgentIdentity
    function setAgentURI(uint256 agentId, string calldata newURI) external {
        _requireOperator(agentId);
        _setTokenURI(agentId, newURI);
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    /// @inheritdoc IAgentIdentity
    function setMetadata(uint256 agentId, string calldata metadataKey, bytes calldata metadataValue) external {
        _requireOperator(agentId);
        if (_isAgentWalletKey(metadataKey)) revert ReservedMetadataKey(metadataKey);
        _setMetadata(_getAgentIdentityStorage(), agentId, metadataKey, metadataValue);
    }

    /// @inheritdoc IAgentIdentity
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external {
        address owner = _requireOperator(agentId);
        if (newWallet == address(0)) revert ZeroAddress();
        if (block.timestamp > deadline) revert AgentWalletSignatureExpired(deadline);
        uint256 latest = block.timestamp + MAX_SIGNATURE_LIFETIME;
        if (deadline > latest) revert AgentWalletDeadlineTooFar(deadline, latest);
        bytes32 digest = _hashTypedDataV4(
            keccak256(abi.encode(AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, owner, deadline))
        );
        if (!SignatureChecker.isValidSignatureNow(newWallet, digest, signature)) {
            revert InvalidAgentWalletSignature(agentId, newWallet);
        }
        _setWallet(_getAgentIdentityStorage(), agentId, newWallet);
    }

    /// @inheritdoc IAgentIdentity
    function unsetAgentWallet(uint256 agentId) external {
        _requireOperator(agentId);
        _setWallet(_getAgentIdentityStorage(), agentId, address(0));
    }

    /// @dev Every transfer (not a mint) clears the agent wallet: the new owner proves control of a wallet anew.
    function _update(address to, uint256 tokenId, address auth) internal override returns (address from) {
        from = super._update(to, tokenId, auth);
        if (from != address(0) && to != address(0)) _setWallet(_getAgentIdentityStorage(), tokenId, address(0));
    }

    function _setMetadata(
        AgentIdentityStorage storage $,
        uint256 agentId,
        string memory metadataKey,
        bytes memory metadataValue
    ) private {
        if (bytes(metadataKey).length == 0) revert EmptyMetadataKey();
        $.metadata[agentId][metadataKey] = metadataValue;
        emit MetadataSet(agentId, metadataKey, metadataKey, metadataValue);
    }

    /// @dev Writes the wallet entry (empty for zero) and keeps {agentIdOfWallet} pointing at the latest holder.
    function _setWallet(AgentIdentityStorage storage $, uint256 agentId, address wallet) private {
        address previous = _walletOf($, agentId);
        if (previous != address(0) && $.agentOfWallet[previous] == agentId) delete $.agentOfWallet[previous];
        bytes memory value = wallet == address(0) ? bytes("") : abi.encodePacked(wallet);
        $.metadata[agentId][AGENT_WALLET_KEY] = value;
        if (wallet != address(0)) $.agentOfWallet[wallet] = agentId;
        emit MetadataSet(agentId, AGENT_WALLET_KEY, AGENT_WALLET_KEY, value);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IAgentIdentity
    function getMetadata(uint256 agentId, string calldata metadataKey) external view returns (bytes memory) {
        return _getAgentIdentityStorage().metadata[agentId][metadataKey];
    }

    /// @inheritdoc IAgentIdentity
    function getAgentWallet(uint256 agentId) external view returns (address) {
        return _walletOf(_getAgentIdentityStorage(), agentId);
    }

    /// @inheritdoc IAgentIdentity
    function agentIdOfWallet(address wallet) external view returns (uint256) {
        return _getAgentIdentityStorage().agentOfWallet[wallet];
    }

    /// @inheritdoc IAgentIdentity
    function lastAgentId() external view returns (uint256) {
        return _getAgentIdentityStorage().lastAgentId;
    }

    /// @inheritdoc IAgentIdentity
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool) {
        return _isAuthorized(_requireOwned(agentId), spender, agentId);
    }

    /// @inheritdoc IAgentIdentity
    function version() external pure returns (string memory) {
        return "1.0.0";
    }

    function supportsInterface(
        bytes4 interfaceId
    ) public view override(ERC721URIStorageUpgradeable, AccessControlUpgradeable) returns (bool) {
        return super.supportsInterface(interfaceId);
    }

    /// @dev Only the admin upgrades.
    function _authorizeUpgrade(address) internal view override onlyRole(DEFAULT_ADMIN_ROLE) {}

    // ------------------------------------------------------------------ internals

    /// @dev The owner of an existing agent, when the caller is that owner or an operator it approved.
    function _requireOperator(uint256 agentId) private view returns (address owner) {
        owner = _requireOwned(agentId);
        if (!_isAuthorized(owner, msg.sender, agentId)) revert NotAgentOperator(agentId, msg.sender);
    }

    function _walletOf(AgentIdentityStorage storage $, uint256 agentId) private view returns (address) {
        bytes memory entry = $.metadata[agentId][AGENT_WALLET_KEY];
        return entry.length == 20 ? address(bytes20(entry)) : address(0);
    }

    function _isAgentWalletKey(string memory metadataKey) private pure returns (bool) {
        return keccak256(bytes(metadataKey)) == AGENT_WALLET_KEY_HASH;
    }

    function _walletFrom(bytes memory metadataValue) private pure returns (address wallet) {
        if (metadataValue.length != 20) revert InvalidAgentWallet(metadataValue);
        wallet = address(bytes20(metadataValue));
        if (wallet == address(0)) revert InvalidAgentWallet(metadataValue);
    }
}
