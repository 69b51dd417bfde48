import { expect } from "chai";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openJournal, readJournal } from "../../cli/src/journal";
import { taskDir } from "../support/cli";

const funding = (key: string, taskHash: string, nonce: number) => ({
  t: "funding" as const,
  chain: "arc",
  wallet: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
  escrow: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  nonce,
  block: 1,
  rows: [
    {
      key,
      line: 2,
      taskHash,
      amount: "1000000",
      indexParams: { taskHash, privacy: "public" as const, verificationMode: "auto" as const, requiredCapabilities: [], locationZone: "global" },
    },
  ],
});

describe("cli: the run journal", function () {
  it("folds entries per row: attempts, their funding hash, the final status", async function () {
    const file = path.join(taskDir({}), "r.csv.journal.jsonl");
    const journal = await openJournal(file);
    await journal.append(funding("a:0", "0x01", 5));
    await journal.append({ t: "failed", key: "a:0", taskHash: "0x01", error: { code: "TX_REVERTED", message: "reverted" } });
    await journal.append(funding("a:0", "0x02", 6));
    await journal.append({ t: "funded", txHash: "0xtx", rows: [{ key: "a:0", taskHash: "0x02" }] });
    await journal.append({ t: "posted", key: "a:0", taskHash: "0x02", txHash: "0xtx" });
    await journal.close();
    const row = readJournal(file).get("a:0")!;
    expect(row.attempts.map((a) => [a.taskHash, a.nonce, a.txHash])).to.deep.equal([
      ["0x01", 5, undefined],
      ["0x02", 6, "0xtx"],
    ]);
    expect(row.posted).to.deep.equal({ taskHash: "0x02", txHash: "0xtx" });
    expect(row.lastError).to.deep.include({ code: "TX_REVERTED", paid: false });
  });

  it("drops a line torn by a kill mid-write, and appends after it on a line of its own", async function () {
    const file = path.join(taskDir({}), "r.csv.journal.jsonl");
    const whole = JSON.stringify({ ...funding("a:0", "0x01", 5), at: "2026-01-01T00:00:00.000Z" });
    writeFileSync(file, `${whole}\n{"t":"funded","txHash":"0x`);
    expect(readJournal(file).get("a:0")!.attempts[0]!.txHash).to.equal(undefined);
    const journal = await openJournal(file);
    await journal.append({ t: "posted", key: "a:0", taskHash: "0x01", txHash: "0xtx" });
    await journal.close();
    const lines = readFileSync(file, "utf8").split("\n");
    expect(lines).to.have.length(3);
    expect(lines[0]).to.equal(whole);
    expect(readJournal(file).get("a:0")!.posted).to.deep.equal({ taskHash: "0x01", txHash: "0xtx" });
  });

  it("refuses a damaged line that is not the last (JOURNAL_MISMATCH)", function () {
    const file = path.join(taskDir({}), "r.csv.journal.jsonl");
    writeFileSync(file, 'not json\n{"t":"posted","key":"a:0","taskHash":"0x01","txHash":"0x02"}\n');
    expect(() => readJournal(file))
      .to.throw()
      .with.property("code", "JOURNAL_MISMATCH");
  });

  it("takes over a lock its holder left behind (a dead pid, or its own pid reused) and releases it on close", async function () {
    const file = path.join(taskDir({}), "r.csv.journal.jsonl");
    writeFileSync(`${file}.lock`, String(process.pid));
    const reopened = await openJournal(file);
    await reopened.close();
    expect(existsSync(`${file}.lock`)).to.equal(false);
    writeFileSync(`${file}.lock`, "999999999");
    const takenOver = await openJournal(file);
    expect(readFileSync(`${file}.lock`, "utf8")).to.equal(String(process.pid));
    await takenOver.close();
    expect(existsSync(file)).to.equal(false, "a run that records nothing leaves no journal");
  });
});
