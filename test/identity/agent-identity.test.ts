/**
 * AgentIdentity: ERC-8004 IdentityRegistry function signatures and events as the standard names them, registration
 * (by owners and, for owners, by the minter), metadata and the agent wallet, ERC-721 behaviour, every refusal.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { Interface } from "ethers";
import { registeredAgentFixture, registriesFixture } from "../fixtures/registries";
import { AgentIdentity__factory, ERC1271Wallet__factory, type AgentIdentity } from "../../typechain-types";

const { ethers, upgrades } = hre;

/**
 * The IdentityRegistry interface of ERC-8004 v1.0 ("Trustless Agents"), written out from the standard's text: the
 * function signatures its Identity Registry section names, and its events with their indexed parameters.
 */
const ERC8004_FUNCTIONS = [
  "register(string,(string,bytes)[])",
  "register(string)",
  "register()",
  "setAgentURI(uint256,string)",
  "getMetadata(uint256,string)",
  "setMetadata(uint256,string,bytes)",
  "setAgentWallet(uint256,address,uint256,bytes)",
  "getAgentWallet(uint256)",
  "unsetAgentWallet(uint256)",
];
const ERC8004_EVENTS = {
  "Registered(uint256,string,address)": [true, false, true],
  "MetadataSet(uint256,string,string,bytes)": [true, true, false, false],
  "URIUpdated(uint256,string,address)": [true, false, true],
};
const WALLET_TYPES = {
  AgentWalletSet: [
    { name: "agentId", type: "uint256" },
    { name: "newWallet", type: "address" },
    { name: "owner", type: "address" },
    { name: "deadline", type: "uint256" },
  ],
};

async function walletSignature(
  identity: AgentIdentity,
  wallet: HardhatEthersSigner,
  agentId: bigint,
  owner: string,
  deadline: bigint,
): Promise<string> {
  const { chainId } = await ethers.provider.getNetwork();
  const domain = { name: "ERC8004IdentityRegistry", version: "1", chainId, verifyingContract: await identity.getAddress() };
  return wallet.signTypedData(domain, WALLET_TYPES, { agentId, newWallet: wallet.address, owner, deadline });
}

describe("AgentIdentity", function () {
  describe("ERC-8004 compatibility", function () {
    it("has every IdentityRegistry function under the standard's signature, with its return type", async function () {
      const { identity } = await loadFixture(registriesFixture);
      const abi: Interface = identity.interface;
      for (const signature of ERC8004_FUNCTIONS) {
        expect(abi.getFunction(signature), signature).to.not.equal(null);
      }
      for (const overload of ["register(string,(string,bytes)[])", "register(string)", "register()"]) {
        const outputs = abi.getFunction(overload)!.outputs;
        expect(outputs.map((o) => `${o.type} ${o.name}`)).to.deep.equal(["uint256 agentId"]);
      }
      expect(abi.getFunction("getMetadata(uint256,string)")!.outputs[0]!.type).to.equal("bytes");
      expect(abi.getFunction("getAgentWallet(uint256)")!.outputs[0]!.type).to.equal("address");
      const entry = abi.getFunction("register(string,(string,bytes)[])")!.inputs[1]!;
      expect(entry.arrayChildren!.components!.map((c) => c.name)).to.deep.equal(["metadataKey", "metadataValue"]);
    });

    it("emits the standard's events, indexed as the standard indexes them", async function () {
      const { identity } = await loadFixture(registriesFixture);
      const abi: Interface = identity.interface;
      for (const [signature, indexed] of Object.entries(ERC8004_EVENTS)) {
        const event = abi.getEvent(signature);
        expect(event, signature).to.not.equal(null);
        expect(event!.inputs.map((i) => i.indexed)).to.deep.equal(indexed);
      }
      expect(identity.interface.getEvent("Registered").inputs.map((i) => i.name)).to.deep.equal(["agentId", "agentURI", "owner"]);
    });

    it("answers ERC-165 for ERC-721, its metadata extension, ERC-4906 and AccessControl", async function () {
      const { identity } = await loadFixture(registriesFixture);
      for (const id of ["0x01ffc9a7", "0x80ac58cd", "0x5b5e139f", "0x49064906", "0x7965db0b"]) {
        expect(await identity.supportsInterface(id), id).to.equal(true);
      }
      expect(await identity.supportsInterface("0xffffffff")).to.equal(false);
      expect(await identity.name()).to.equal("Market Agent Identity");
      expect(await identity.symbol()).to.equal("AGENT");
    });
  });

  describe("register by the owner", function () {
    it("register(agentURI, metadata) mints the next id with Transfer, Registered and MetadataSet", async function () {
      const { identity, owner } = await loadFixture(registriesFixture);
      const uri = "https://agent.example/card.json";
      const tx = identity
        .connect(owner)
        ["register(string,(string,bytes)[])"](uri, [{ metadataKey: "model", metadataValue: ethers.toUtf8Bytes("gpt") }]);
      await expect(tx).to.emit(identity, "Transfer").withArgs(ethers.ZeroAddress, owner.address, 1n);
      await expect(tx).to.emit(identity, "Registered").withArgs(1n, uri, owner.address);
      await expect(tx).to.emit(identity, "MetadataSet").withArgs(1n, "agentWallet", "agentWallet", owner.address.toLowerCase());
      await expect(tx)
        .to.emit(identity, "MetadataSet")
        .withArgs(1n, "model", "model", ethers.hexlify(ethers.toUtf8Bytes("gpt")));
      expect(await identity.ownerOf(1n)).to.equal(owner.address);
      expect(await identity.tokenURI(1n)).to.equal(uri);
      expect(await identity.getAgentWallet(1n)).to.equal(owner.address);
      expect(await identity.getMetadata(1n, "model")).to.equal(ethers.hexlify(ethers.toUtf8Bytes("gpt")));
      expect(await identity.getMetadata(1n, "agentWallet")).to.equal(owner.address.toLowerCase());
      expect(await identity.lastAgentId()).to.equal(1n);
      expect(await identity.agentIdOfWallet(owner.address)).to.equal(1n);
    });

    it("register(agentURI) and register() mint ids 1 and 2; the URI comes later with setAgentURI", async function () {
      const { identity, owner, stranger } = await loadFixture(registriesFixture);
      await expect(identity.connect(owner)["register(string)"]("ipfs://card"))
        .to.emit(identity, "Registered")
        .withArgs(1n, "ipfs://card", owner.address);
      await expect(identity.connect(stranger)["register()"]()).to.emit(identity, "Registered").withArgs(2n, "", stranger.address);
      expect(await identity.tokenURI(2n)).to.equal("");
      await expect(identity.connect(stranger).setAgentURI(2n, "ipfs://later"))
        .to.emit(identity, "URIUpdated")
        .withArgs(2n, "ipfs://later", stranger.address);
      expect(await identity.tokenURI(2n)).to.equal("ipfs://later");
      expect(await identity.balanceOf(owner.address)).to.equal(1n);
    });

    it("refuses the reserved agentWallet key with ReservedMetadataKey(key) and an empty key with EmptyMetadataKey()", async function () {
      const { identity, owner, agent } = await loadFixture(registriesFixture);
      const register = identity.connect(owner).getFunction("register(string,(string,bytes)[])");
      await expect(register("u", [{ metadataKey: "agentWallet", metadataValue: agent.address }]))
        .to.be.revertedWithCustomError(identity, "ReservedMetadataKey")
        .withArgs("agentWallet");
      await expect(register("u", [{ metadataKey: "", metadataValue: "0x01" }])).to.be.revertedWithCustomError(identity, "EmptyMetadataKey");
      expect(await identity.lastAgentId()).to.equal(0n);
    });
  });

  describe("registerFor by the minter", function () {
    it("mints to the owner with the agent's wallet and metadata hash", async function () {
      const { identity, owner, agent, minter, agentId, agentURI, metadataHash } = await loadFixture(registeredAgentFixture);
      expect(await identity.ownerOf(agentId)).to.equal(owner.address);
      expect(await identity.balanceOf(minter.address)).to.equal(0n);
      expect(await identity.tokenURI(agentId)).to.equal(agentURI);
      expect(await identity.getAgentWallet(agentId)).to.equal(agent.address);
      expect(await identity.agentIdOfWallet(agent.address)).to.equal(agentId);
      expect(await identity.agentIdOfWallet(owner.address)).to.equal(0n);
      expect(await identity.getMetadata(agentId, "metadataHash")).to.equal(metadataHash);
      expect(ethers.dataLength(metadataHash)).to.equal(32);
    });

    it("emits Registered with the owner and the wallet's MetadataSet", async function () {
      const { identity, minter, owner, agent } = await loadFixture(registriesFixture);
      const tx = identity.connect(minter).registerFor(owner.address, "https://card", [{ metadataKey: "agentWallet", metadataValue: agent.address }]);
      await expect(tx).to.emit(identity, "Registered").withArgs(1n, "https://card", owner.address);
      await expect(tx).to.emit(identity, "MetadataSet").withArgs(1n, "agentWallet", "agentWallet", agent.address.toLowerCase());
      await expect(tx).to.emit(identity, "Transfer").withArgs(ethers.ZeroAddress, owner.address, 1n);
    });

    it("without an agentWallet entry, the wallet starts as the owner", async function () {
      const { identity, minter, owner } = await loadFixture(registriesFixture);
      await identity.connect(minter).registerFor(owner.address, "https://card", []);
      expect(await identity.getAgentWallet(1n)).to.equal(owner.address);
    });

    it("only the minter: AccessControlUnauthorizedAccount(caller, MINTER_ROLE)", async function () {
      const { identity, admin, owner, stranger, agent } = await loadFixture(registriesFixture);
      const minterRole = await identity.MINTER_ROLE();
      for (const caller of [admin, owner, stranger, agent]) {
        await expect(identity.connect(caller).registerFor(owner.address, "u", []))
          .to.be.revertedWithCustomError(identity, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, minterRole);
      }
      await identity.connect(admin).grantRole(minterRole, stranger.address);
      await expect(identity.connect(stranger).registerFor(owner.address, "u", [])).to.emit(identity, "Registered");
    });

    it("refuses a zero owner and a malformed agentWallet with their errors, minting nothing", async function () {
      const { identity, minter, owner } = await loadFixture(registriesFixture);
      await expect(identity.connect(minter).registerFor(ethers.ZeroAddress, "u", [])).to.be.revertedWithCustomError(identity, "ZeroAddress");
      for (const value of ["0x1234", ethers.ZeroAddress, ethers.zeroPadValue("0x01", 32)]) {
        await expect(identity.connect(minter).registerFor(owner.address, "u", [{ metadataKey: "agentWallet", metadataValue: value }]))
          .to.be.revertedWithCustomError(identity, "InvalidAgentWallet")
          .withArgs(value);
      }
      expect(await identity.lastAgentId()).to.equal(0n);
    });

    it("to a contract that does not take ERC-721 tokens: ERC721InvalidReceiver(owner), nothing minted", async function () {
      const { identity, minter, escrowAddress } = await loadFixture(registriesFixture);
      await expect(identity.connect(minter).registerFor(escrowAddress, "u", []))
        .to.be.revertedWithCustomError(identity, "ERC721InvalidReceiver")
        .withArgs(escrowAddress);
      expect(await identity.lastAgentId()).to.equal(0n);
    });
  });

  describe("updates by the owner or an operator", function () {
    it("setAgentURI and setMetadata: owner, approved address and operator may; anyone else NotAgentOperator(id, caller)", async function () {
      const { identity, owner, operator, stranger, agent, agentId } = await loadFixture(registeredAgentFixture);
      await expect(identity.connect(stranger).setAgentURI(agentId, "x"))
        .to.be.revertedWithCustomError(identity, "NotAgentOperator")
        .withArgs(agentId, stranger.address);
      await expect(identity.connect(agent).setMetadata(agentId, "k", "0x01"))
        .to.be.revertedWithCustomError(identity, "NotAgentOperator")
        .withArgs(agentId, agent.address);
      expect(await identity.isAuthorizedOrOwner(stranger.address, agentId)).to.equal(false);

      await identity.connect(owner).approve(operator.address, agentId);
      expect(await identity.isAuthorizedOrOwner(operator.address, agentId)).to.equal(true);
      await expect(identity.connect(operator).setAgentURI(agentId, "https://new"))
        .to.emit(identity, "URIUpdated")
        .withArgs(agentId, "https://new", operator.address);
      await identity.connect(owner).approve(ethers.ZeroAddress, agentId);
      await identity.connect(owner).setApprovalForAll(stranger.address, true);
      await expect(identity.connect(stranger).setMetadata(agentId, "region", ethers.toUtf8Bytes("eu")))
        .to.emit(identity, "MetadataSet")
        .withArgs(agentId, "region", "region", ethers.hexlify(ethers.toUtf8Bytes("eu")));
      await expect(identity.connect(owner).setMetadata(agentId, "region", "0x"))
        .to.emit(identity, "MetadataSet")
        .withArgs(agentId, "region", "region", "0x");
      expect(await identity.getMetadata(agentId, "region")).to.equal("0x");
      expect(await identity.tokenURI(agentId)).to.equal("https://new");
    });

    it("refuses agentWallet through setMetadata, and unknown agents with ERC721NonexistentToken(id)", async function () {
      const { identity, owner, agentId } = await loadFixture(registeredAgentFixture);
      await expect(identity.connect(owner).setMetadata(agentId, "agentWallet", owner.address))
        .to.be.revertedWithCustomError(identity, "ReservedMetadataKey")
        .withArgs("agentWallet");
      await expect(identity.connect(owner).setMetadata(agentId, "", "0x01")).to.be.revertedWithCustomError(identity, "EmptyMetadataKey");
      for (const act of [
        () => identity.connect(owner).setAgentURI(9n, "x"),
        () => identity.connect(owner).setMetadata(9n, "k", "0x01"),
        () => identity.connect(owner).unsetAgentWallet(9n),
        () => identity.isAuthorizedOrOwner(owner.address, 9n),
      ]) {
        await expect(act()).to.be.revertedWithCustomError(identity, "ERC721NonexistentToken").withArgs(9n);
      }
      expect(await identity.getMetadata(9n, "k")).to.equal("0x");
      expect(await identity.getAgentWallet(9n)).to.equal(ethers.ZeroAddress);
    });
  });

  describe("the agent wallet", function () {
    it("setAgentWallet takes the new wallet's EIP-712 signature; the old wallet lets go", async function () {
      const { identity, owner, agent, stranger: next, agentId } = await loadFixture(registeredAgentFixture);
      const deadline = BigInt(await time.latest()) + 60n;
      const signature = await walletSignature(identity, next, agentId, owner.address, deadline);
      await expect(identity.connect(owner).setAgentWallet(agentId, next.address, deadline, signature))
        .to.emit(identity, "MetadataSet")
        .withArgs(agentId, "agentWallet", "agentWallet", next.address.toLowerCase());
      expect(await identity.getAgentWallet(agentId)).to.equal(next.address);
      expect(await identity.agentIdOfWallet(next.address)).to.equal(agentId);
      expect(await identity.agentIdOfWallet(agent.address)).to.equal(0n);
    });

    it("refuses a late, a far-off, a foreign or a zero-wallet signature, and a caller who is no operator", async function () {
      const { identity, owner, agent, stranger, agentId } = await loadFixture(registeredAgentFixture);
      const now = BigInt(await time.latest());
      const late = now;
      const lateSignature = await walletSignature(identity, stranger, agentId, owner.address, late);
      await time.setNextBlockTimestamp(now + 10n);
      await expect(identity.connect(owner).setAgentWallet(agentId, stranger.address, late, lateSignature))
        .to.be.revertedWithCustomError(identity, "AgentWalletSignatureExpired")
        .withArgs(late);

      const far = now + 1_000n;
      await time.setNextBlockTimestamp(now + 20n);
      await expect(
        identity
          .connect(owner)
          .setAgentWallet(agentId, stranger.address, far, await walletSignature(identity, stranger, agentId, owner.address, far)),
      )
        .to.be.revertedWithCustomError(identity, "AgentWalletDeadlineTooFar")
        .withArgs(far, now + 20n + 300n);

      const deadline = now + 100n;
      const signedByAnother = await walletSignature(identity, agent, agentId, owner.address, deadline);
      await expect(identity.connect(owner).setAgentWallet(agentId, stranger.address, deadline, signedByAnother))
        .to.be.revertedWithCustomError(identity, "InvalidAgentWalletSignature")
        .withArgs(agentId, stranger.address);
      await expect(identity.connect(owner).setAgentWallet(agentId, ethers.ZeroAddress, deadline, signedByAnother)).to.be.revertedWithCustomError(
        identity,
        "ZeroAddress",
      );
      const good = await walletSignature(identity, stranger, agentId, owner.address, deadline);
      await expect(identity.connect(stranger).setAgentWallet(agentId, stranger.address, deadline, good))
        .to.be.revertedWithCustomError(identity, "NotAgentOperator")
        .withArgs(agentId, stranger.address);
      expect(await identity.getAgentWallet(agentId)).to.equal(agent.address);
    });

    it("a contract wallet proves control with ERC-1271", async function () {
      const { identity, owner, stranger, agent, agentId } = await loadFixture(registeredAgentFixture);
      const wallet = await new ERC1271Wallet__factory(owner).deploy(stranger.address);
      const walletAddress = await wallet.getAddress();
      const deadline = BigInt(await time.latest()) + 60n;
      const { chainId } = await ethers.provider.getNetwork();
      const domain = { name: "ERC8004IdentityRegistry", version: "1", chainId, verifyingContract: await identity.getAddress() };
      const value = { agentId, newWallet: walletAddress, owner: owner.address, deadline };
      const byItsKey = await stranger.signTypedData(domain, WALLET_TYPES, value);
      const byAnotherKey = await agent.signTypedData(domain, WALLET_TYPES, value);
      await expect(identity.connect(owner).setAgentWallet(agentId, walletAddress, deadline, byAnotherKey))
        .to.be.revertedWithCustomError(identity, "InvalidAgentWalletSignature")
        .withArgs(agentId, walletAddress);
      await identity.connect(owner).setAgentWallet(agentId, walletAddress, deadline, byItsKey);
      expect(await identity.getAgentWallet(agentId)).to.equal(walletAddress);
    });

    it("unsetAgentWallet clears it for the owner only", async function () {
      const { identity, owner, agent, agentId } = await loadFixture(registeredAgentFixture);
      await expect(identity.connect(agent).unsetAgentWallet(agentId))
        .to.be.revertedWithCustomError(identity, "NotAgentOperator")
        .withArgs(agentId, agent.address);
      await expect(identity.connect(owner).unsetAgentWallet(agentId))
        .to.emit(identity, "MetadataSet")
        .withArgs(agentId, "agentWallet", "agentWallet", "0x");
      expect(await identity.getAgentWallet(agentId)).to.equal(ethers.ZeroAddress);
      expect(await identity.agentIdOfWallet(agent.address)).to.equal(0n);
    });
  });

  describe("ERC-721 behaviour", function () {
    it("transfers by owner and approved operator; every transfer clears the agent wallet", async function () {
      const { identity, owner, operator, stranger, agent, agentId } = await loadFixture(registeredAgentFixture);
      await expect(identity.connect(owner).transferFrom(owner.address, stranger.address, agentId))
        .to.emit(identity, "Transfer")
        .withArgs(owner.address, stranger.address, agentId)
        .and.to.emit(identity, "MetadataSet")
        .withArgs(agentId, "agentWallet", "agentWallet", "0x");
      expect(await identity.ownerOf(agentId)).to.equal(stranger.address);
      expect(await identity.getAgentWallet(agentId)).to.equal(ethers.ZeroAddress);
      expect(await identity.agentIdOfWallet(agent.address)).to.equal(0n);
      expect(await identity.getMetadata(agentId, "metadataHash")).to.not.equal("0x"); // other entries stay

      await identity.connect(stranger).setApprovalForAll(operator.address, true);
      await identity.connect(operator)["safeTransferFrom(address,address,uint256)"](stranger.address, owner.address, agentId);
      expect(await identity.ownerOf(agentId)).to.equal(owner.address);
      expect(await identity.balanceOf(stranger.address)).to.equal(0n);
    });

    it("refuses a transfer by anyone else and a safe transfer to a contract that takes no tokens", async function () {
      const { identity, owner, stranger, agentId, escrowAddress } = await loadFixture(registeredAgentFixture);
      await expect(identity.connect(stranger).transferFrom(owner.address, stranger.address, agentId))
        .to.be.revertedWithCustomError(identity, "ERC721InsufficientApproval")
        .withArgs(stranger.address, agentId);
      await expect(identity.connect(owner)["safeTransferFrom(address,address,uint256)"](owner.address, escrowAddress, agentId))
        .to.be.revertedWithCustomError(identity, "ERC721InvalidReceiver")
        .withArgs(escrowAddress);
      await expect(identity.ownerOf(5n)).to.be.revertedWithCustomError(identity, "ERC721NonexistentToken").withArgs(5n);
    });
  });

  describe("set-up and upgrades", function () {
    it("refuses a second initialize and an initialize of the implementation; only the admin upgrades", async function () {
      const { identity, identityAddress, admin, stranger, agentId } = await loadFixture(registeredAgentFixture);
      await expect(identity.initialize(admin.address)).to.be.revertedWithCustomError(identity, "InvalidInitialization");
      const implementation = AgentIdentity__factory.connect(await upgrades.erc1967.getImplementationAddress(identityAddress), admin);
      await expect(implementation.initialize(admin.address)).to.be.revertedWithCustomError(identity, "InvalidInitialization");
      const next = (await upgrades.prepareUpgrade(identityAddress, await ethers.getContractFactory("AgentIdentity", admin), {
        kind: "uups",
        redeployImplementation: "always",
      })) as string;
      await expect(identity.connect(stranger).upgradeToAndCall(next, "0x"))
        .to.be.revertedWithCustomError(identity, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await identity.DEFAULT_ADMIN_ROLE());
      await identity.connect(admin).upgradeToAndCall(next, "0x");
      expect(await identity.ownerOf(agentId)).to.not.equal(ethers.ZeroAddress);
      expect(await identity.version()).to.equal("1.0.0");
    });
  });
});
