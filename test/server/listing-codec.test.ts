import { expect } from "chai";
import { createDatabase, migrateToLatest, type Db } from "../../server/db";
import { listedFields, listingMeta, listingRow, type ListedFields, type ListingOrigin } from "../../server/tasks/listing-codec";
import { PUBLIC_BRIEF_PREVIEW_CHARS } from "@market/core/limits";

describe("server: the listing codec (listed fields <-> listings row <-> task metadata)", function () {
  let db: Db;
  beforeEach(async function () {
    db = createDatabase({ sqlitePath: ":memory:" });
    await migrateToLatest(db);
  });
  afterEach(async function () {
    await db.destroy();
  });

  const origin: ListingOrigin = {
    taskHash: `0x${"ab".repeat(32)}`,
    chain: "arc",
    poster: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    token: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    fundingTx: `0x${"CD".repeat(32)}`,
    listedAt: 1_700_000_000_123,
  };
  const everything: ListedFields = {
    privacy: "private",
    publicBrief: null,
    routingSummary: "Summarise a memo",
    rootHash: `0x${"ab".repeat(32)}`,
    verificationMode: "agent",
    verificationCriteria: { min_length: 10, contains_keywords: ["budget"], pass_threshold: 50 },
    verifierAddress: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    requiredCapabilities: ["summarization", "translation"],
    locationZone: "eu",
    targetExecutor: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    targetExecutorType: "llm",
    serviceId: 7,
    keyCustodyBlob: "04abcdef",
  };
  const bare: ListedFields = {
    privacy: "public",
    publicBrief: "x".repeat(PUBLIC_BRIEF_PREVIEW_CHARS + 1),
    routingSummary: null,
    rootHash: null,
    verificationMode: "manual",
    verificationCriteria: null,
    verifierAddress: null,
    requiredCapabilities: [],
    locationZone: "global",
    targetExecutor: null,
    targetExecutorType: null,
    serviceId: null,
    keyCustodyBlob: null,
  };

  async function roundTrip(fields: ListedFields) {
    await db.insertInto("listings").values(listingRow(fields, origin)).execute();
    return db.selectFrom("listings").selectAll().where("task_hash", "=", origin.taskHash).executeTakeFirstOrThrow();
  }
  /** The row as readers show it: with the task's amount, which escrow_tasks alone keeps (issue 24). */
  const withAmount = <T extends object>(row: T) => ({ ...row, amount: "5000003" });

  for (const [name, fields] of [
    ["every field set", everything],
    ["no optional field set", bare],
  ] as const) {
    it(`reads back what it wrote, through the database: ${name}`, async function () {
      const row = await roundTrip(fields);
      expect(listedFields(row)).to.deep.equal(fields);
      expect(row).to.include({ chain: "arc", poster: origin.poster, token: origin.token, listed_at: origin.listedAt });
      expect(row, "one copy of the amount: escrow_tasks.amount").to.not.have.property("amount");
      expect(row.funding_tx).to.equal(origin.fundingTx.toLowerCase());
    });
  }

  it("shows every set field in the task's metadata", async function () {
    const meta = listingMeta(withAmount(await roundTrip(everything)), 1_800_000_000);
    expect(meta).to.deep.equal({
      chain: "arc",
      taskHash: origin.taskHash,
      poster: origin.poster,
      privacy: "private",
      reward: { amount: "5000003", unit: { symbol: "USDC", decimals: 6, address: origin.token } },
      routingSummary: "Summarise a memo",
      rootHash: everything.rootHash,
      verificationMode: "agent",
      verificationCriteria: everything.verificationCriteria,
      verifierAddress: everything.verifierAddress,
      requiredCapabilities: ["summarization", "translation"],
      locationZone: "eu",
      targetExecutor: everything.targetExecutor,
      targetExecutorType: "llm",
      serviceId: 7,
      deadline: 1_800_000_000_000,
      listedAt: origin.listedAt,
      fundingTx: origin.fundingTx.toLowerCase(),
    });
  });

  it("leaves out unset fields (never null) and shows the start of a long public brief, marked truncated", async function () {
    const meta = listingMeta(withAmount(await roundTrip(bare)), 1_800_000_000);
    expect(Object.values(meta)).to.not.include(null);
    expect(meta).to.not.have.any.keys(
      "routingSummary",
      "rootHash",
      "verificationCriteria",
      "verifierAddress",
      "targetExecutor",
      "targetExecutorType",
      "serviceId",
    );
    expect(meta.publicBrief).to.have.length(PUBLIC_BRIEF_PREVIEW_CHARS);
    expect(meta.publicBriefTruncated).to.equal(true);
    expect(meta.requiredCapabilities).to.deep.equal([]);
  });

  it("refuses to show a row whose values are not what the service writes (no silent bad answer)", async function () {
    const row = withAmount(await roundTrip(bare));
    expect(() => listingMeta({ ...row, poster: "not an address" }, 0)).to.throw(TypeError, /not an address/);
    expect(() => listingMeta({ ...row, chain: "mainnet" }, 0)).to.throw(/unknown chain mainnet/);
  });
});
