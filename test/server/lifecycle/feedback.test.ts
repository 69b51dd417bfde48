/**
 * Around a task: the poster's review of a completed task, messages between the poster and the executor, and bids on
 * private briefs not wrapped to the bidder.
 */
import { expect } from "chai";
import { privateKeyOf, type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { publicKeyFromPrivateKey, unwrapBriefKey, wrapBriefKey } from "@market/core/crypto";
import { AMOUNT, brief, partiesServer, PASSING, steps, type Steps } from "./helpers";

interface Message {
  id: number;
  sender: string;
  body: string;
  createdAt: number;
}

describe("lifecycle: reviews, messages and bids", function () {
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey },
    } = await partiesServer());
    t = steps(s);
  });
  afterEach(async function () {
    await s.close();
  });

  const post = () => t.postPublic(posterKey);
  async function completed() {
    const { taskHash } = await post();
    expectOk(await t.accept(agentKey, taskHash));
    expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING)).status).to.equal("verified");
    return taskHash;
  }

  describe("reviews", function () {
    const review = (key: string, taskHash: string, rating: number, comment?: string) =>
      s.call<{ taskHash: string; agent: string; rating: number }>("POST", `/api/v1/a2a/tasks/${taskHash}/review`, {
        key,
        body: { rating, ...(comment ? { comment } : {}) },
      });
    const reviews = () =>
      s.call<{ reviews: Array<{ taskHash: string; poster: string; rating: number; comment: string | null }>; averageRating: number | null }>(
        "GET",
        `/api/v1/reputation/${s.worker.address}/reviews`,
      );

    it("TASK_NOT_COMPLETED before settlement; NOT_POSTER for others; ALREADY_REVIEWED the second time", async function () {
      const { taskHash } = await post();
      expectError(await review(posterKey, taskHash, 5), "TASK_NOT_COMPLETED");
      expectOk(await t.accept(agentKey, taskHash));
      expectError(await review(posterKey, taskHash, 5), "TASK_NOT_COMPLETED");
      await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING);

      expectError(await review(agentKey, taskHash, 5), "NOT_POSTER");
      expectError(await review(await s.apiKeyFor(s.stranger), taskHash, 5), "NOT_POSTER");
      expect(expectOk(await review(posterKey, taskHash, 5, "Quick and right."))).to.deep.equal({ taskHash, agent: s.worker.address, rating: 5 });
      expectError(await review(posterKey, taskHash, 1), "ALREADY_REVIEWED");
      const listed = expectOk(await reviews());
      expect(listed.reviews.map((r) => [r.taskHash, r.rating, r.comment])).to.deep.equal([[taskHash, 5, "Quick and right."]]);
    });

    it("a refunded task cannot be reviewed", async function () {
      const { taskHash } = await post();
      await t.settle(s.poster, posterKey, taskHash, "cancel", "refund");
      expectError(await review(posterKey, taskHash, 2), "TASK_NOT_COMPLETED");
    });

    it("GET /api/v1/reputation/{address}/reviews lists the agent's reviews newest first with their average", async function () {
      expect(expectOk(await reviews())).to.deep.equal({ reviews: [], averageRating: null });
      const first = await completed();
      const second = await completed();
      expectOk(await review(posterKey, first, 4));
      s.advanceClock(1_000);
      expectOk(await review(posterKey, second, 5, "Better."));
      const listed = expectOk(await reviews());
      expect(listed.reviews.map((r) => [r.taskHash, r.poster, r.rating, r.comment])).to.deep.equal([
        [second, s.poster.address, 5, "Better."],
        [first, s.poster.address, 4, null],
      ]);
      expect(listed.averageRating).to.equal(4.5);
    });
  });

  describe("task messages", function () {
    const send = (key: string, taskHash: string, body: string) =>
      s.call<Message>("POST", `/api/v1/a2a/tasks/${taskHash}/messages`, { key, body: { body } });
    const read = (key: string, taskHash: string) => s.call<{ messages: Message[] }>("GET", `/api/v1/a2a/tasks/${taskHash}/messages`, { key });

    it("NO_AGENT_ASSIGNED before an agent takes the task; NOT_TASK_PARTY for anyone but the poster and the executor", async function () {
      const { taskHash } = await post();
      expectError(await send(posterKey, taskHash, "Anyone there?"), "NO_AGENT_ASSIGNED");
      expectError(await read(posterKey, taskHash), "NO_AGENT_ASSIGNED");
      expectError(await send(agentKey, taskHash, "Interested."), "NOT_TASK_PARTY");

      expectOk(await t.accept(agentKey, taskHash));
      const strangerKey = await s.registerAgent(s.stranger);
      expectError(await send(strangerKey, taskHash, "Let me in."), "NOT_TASK_PARTY");
      expectError(await read(strangerKey, taskHash), "NOT_TASK_PARTY");
    });

    it("the poster and the executor exchange messages, read back in order by both", async function () {
      const { taskHash } = await post();
      expectOk(await t.accept(agentKey, taskHash));
      const said = [
        [posterKey, s.poster.address, "Please keep it under 100 words."],
        [agentKey, s.worker.address, "Will do. Any particular tone?"],
        [posterKey, s.poster.address, "Neutral."],
        [agentKey, s.worker.address, "Delivering shortly."],
      ] as const;
      for (const [key, sender, body] of said) {
        expect(expectOk(await send(key, taskHash, body))).to.deep.include({ sender, body });
      }
      for (const key of [posterKey, agentKey]) {
        const { messages } = expectOk(await read(key, taskHash));
        expect(messages.map((m) => [m.sender, m.body])).to.deep.equal(said.map(([, sender, body]) => [sender, body]));
        expect(messages.map((m) => m.id)).to.deep.equal([...messages.map((m) => m.id)].sort((a, b) => a - b));
      }
    });
  });

  describe("bids", function () {
    const bid = (key: string, taskHash: string, message?: string) =>
      s.call<{ taskHash: string; agent: string; wrapped: boolean }>("POST", `/api/v1/a2a/tasks/${taskHash}/bid`, {
        key,
        body: message ? { message } : {},
      });
    const bids = (key: string, taskHash: string) =>
      s.call<{ bids: Array<{ agent: string; message: string | null; publicKey: string | null; capabilities: string[]; reputation: number }> }>(
        "GET",
        `/api/v1/a2a/tasks/${taskHash}/bids`,
        { key },
      );

    it("a bid on a private brief not wrapped to the bidder; the poster reads bids, wraps the key, and the bidder accepts", async function () {
      const bidderKey = await s.registerAgent(s.stranger, ["summarization"]);
      const { fields, aesKey } = await s.privateTask(brief("A private brief."), [s.worker], posterKey);
      const { taskHash } = await s.post(s.poster, posterKey, fields, AMOUNT);
      expectError(await t.accept(bidderKey, taskHash), "NEEDS_WRAP");

      expect(expectOk(await bid(bidderKey, taskHash, "I can do this today."))).to.deep.equal({ taskHash, agent: s.stranger.address, wrapped: false });
      s.advanceClock(1_000);
      expect(expectOk(await bid(agentKey, taskHash))).to.deep.equal({ taskHash, agent: s.worker.address, wrapped: true });

      expectError(await bids(bidderKey, taskHash), "NOT_POSTER");
      expectError(await bids(agentKey, taskHash), "NOT_POSTER");
      const listed = expectOk(await bids(posterKey, taskHash)).bids;
      expect(listed.map((b) => [b.agent, b.message])).to.deep.equal([
        [s.stranger.address, "I can do this today."],
        [s.worker.address, null],
      ]);
      const bidder = listed[0]!;
      expect(bidder).to.deep.include({
        publicKey: publicKeyFromPrivateKey(privateKeyOf(s.stranger)),
        capabilities: ["summarization"],
        reputation: 50,
      });

      const wrapped = wrapBriefKey(aesKey, bidder.publicKey!);
      expectError(
        await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/keys`, { key: bidderKey, body: { wrappedKeys: { [s.stranger.address]: wrapped } } }),
        "NOT_POSTER",
      );
      // Any case of the address and of the hex, as in wrappedKeys at listing: stored checksummed, lowercase, without 0x.
      const lowercase = { [s.stranger.address.toLowerCase()]: `0x${wrapped.toUpperCase()}` };
      expect(
        expectOk(await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/keys`, { key: posterKey, body: { wrappedKeys: lowercase } })),
      ).to.deep.equal({
        taskHash,
        agents: [s.stranger.address],
      });
      expect(expectOk(await bid(bidderKey, taskHash)).wrapped).to.equal(true);
      // Keys go only to registered agents, and only on private tasks.
      const unregistered = await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/keys`, {
        key: posterKey,
        body: { wrappedKeys: { [s.newAdmin.address]: wrapped } },
      });
      expectError(unregistered, "EXECUTOR_NOT_FOUND");
      const { taskHash: publicHash } = await s.post(s.poster, posterKey, s.publicTask(brief()), AMOUNT);
      expectError(
        await s.call("POST", `/api/v1/a2a/tasks/${publicHash}/keys`, { key: posterKey, body: { wrappedKeys: { [s.stranger.address]: wrapped } } }),
        "PUBLIC_TASK_KEYS",
      );
      expect(expectOk(await bid(bidderKey, publicHash)).wrapped).to.equal(true);

      const accepted = expectOk(await t.accept(bidderKey, taskHash));
      expect(accepted.worker).to.equal(s.stranger.address);
      expect(Buffer.from(unwrapBriefKey(accepted.brief.wrappedKey!, privateKeyOf(s.stranger))).equals(Buffer.from(aesKey))).to.equal(true);
    });

    it("OWN_TASK when the poster bids on its own task", async function () {
      const posterAgentKey = await s.registerAgent(s.poster);
      const { fields } = await s.privateTask(brief("A private brief."), [s.worker], posterKey);
      const { taskHash } = await s.post(s.poster, posterKey, fields, AMOUNT);
      expectError(await bid(posterAgentKey, taskHash), "OWN_TASK");
      expect(await s.db.selectFrom("bids").selectAll().execute()).to.have.length(0);
    });
  });
});
