/**
 * A2A v1.0 streaming and push notifications (issue 27) with the official client (`@a2a-js/sdk`): the card says both are
 * on; `SubscribeToTask` and `SendStreamingMessage` stream a task from submitted to completed as it is taken, delivered
 * and paid; a push-notification config delivers the same updates to a loopback receiver, signed, with its token.
 */
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { Webhook } from "standardwebhooks";
import { serverFixture, type TestServer } from "./harness";
import { expectOk } from "./expect";
import { brief, CRITERIA, PASSING, steps } from "./lifecycle/helpers";
import { webhookOutbound } from "../../server/app";
import { createWebhookSender, type WebhookSender } from "../../server/webhooks";
import { webhookReceiver, until } from "../support/webhook-receiver";

/** A port of this suite's own range: the card names it, so the app listens on it. */
const PORT = 41410;
const seeded = serverFixture(
  async (s) => ({
    posterKey: await s.apiKeyFor(s.poster),
    agentKey: await s.registerAgent(s.worker, ["summarization"]),
    strangerKey: await s.registerAgent(s.stranger, ["summarization"]),
  }),
  { publicUrl: `http://127.0.0.1:${PORT}` },
);

/** The A2A state of each item of a stream (the task first, then each status update). */
function stateOf(item: unknown): TaskState | undefined {
  return (item as { payload?: { value?: { status?: { state: TaskState } } } }).payload?.value?.status?.state;
}

describe("server: A2A streaming and push notifications with the official client", function () {
  let s: TestServer;
  let posterKey: string;
  let agentKey: string;
  let strangerKey: string;
  let client: Client;
  let sender: WebhookSender | undefined;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { posterKey, agentKey, strangerKey },
    } = await seeded());
    await s.app.listen({ host: "127.0.0.1", port: PORT });
    client = await new ClientFactory().createFromUrl(`http://127.0.0.1:${PORT}`);
  });
  afterEach(async function () {
    await sender?.stop();
    sender = undefined;
    await s.close();
  });

  /** Takes, delivers and finalizes the task (auto verification passes: paid). */
  async function work(taskHash: string) {
    const t = steps(s);
    expectOk(await t.accept(agentKey, taskHash));
    await s.sync();
    const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    expectOk(await t.finalize(agentKey, taskHash, txHash));
    await s.sync();
  }

  it("the card says streaming and push notifications are on", async function () {
    const card = await client.getAgentCard();
    expect(card.capabilities?.streaming).to.equal(true);
    expect(card.capabilities?.pushNotifications).to.equal(true);
  });

  it("SubscribeToTask streams a task from submitted to completed", async function () {
    const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }), 5_000_003n);
    const states: Array<TaskState | undefined> = [];
    const reading = (async () => {
      for await (const item of client.resubscribeTask({ id: taskHash.toLowerCase() } as Parameters<Client["resubscribeTask"]>[0])) {
        states.push(stateOf(item));
      }
    })();
    await until(() => states.length > 0, 10_000, "the task first");
    await work(taskHash);
    await reading;
    expect(states[0]).to.equal(TaskState.TASK_STATE_SUBMITTED);
    expect(states).to.include(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).to.equal(TaskState.TASK_STATE_COMPLETED);
  });

  it("SendStreamingMessage with the task's id follows it too; without one it is acknowledged", async function () {
    const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }), 5_000_003n);
    const states: Array<TaskState | undefined> = [];
    const message = {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      taskId: taskHash.toLowerCase(),
      parts: [{ content: { $case: "text", value: "follow" } }],
    };
    const reading = (async () => {
      for await (const item of client.sendMessageStream({ message } as unknown as Parameters<Client["sendMessageStream"]>[0]))
        states.push(stateOf(item));
    })();
    await until(() => states.length > 0, 10_000, "the task first");
    await work(taskHash);
    await reading;
    expect(states.at(-1)).to.equal(TaskState.TASK_STATE_COMPLETED);

    const acks: unknown[] = [];
    const hello = { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: "hello" } }] };
    for await (const item of client.sendMessageStream({ message: hello } as unknown as Parameters<Client["sendMessageStream"]>[0])) acks.push(item);
    expect(JSON.stringify(acks)).to.contain("only acknowledges messages");
  });

  it("a push-notification config delivers the task's updates to a loopback receiver, signed, with its token", async function () {
    const receiver = webhookReceiver();
    await receiver.start();
    try {
      const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }), 5_000_003n);
      const id = taskHash.toLowerCase();
      const withKey = (key: string) => ({ serviceParameters: { "x-api-key": key } }) as unknown as Parameters<Client["getTask"]>[1];
      const created = await client.createTaskPushNotificationConfig(
        { taskId: id, url: receiver.url, token: "poster-token" } as Parameters<Client["createTaskPushNotificationConfig"]>[0],
        withKey(posterKey),
      );
      expect(created.taskId).to.equal(id);
      expect(created.url).to.equal(receiver.url);
      const listed = await client.listTaskPushNotificationConfig(
        { taskId: id } as Parameters<Client["listTaskPushNotificationConfig"]>[0],
        withKey(posterKey),
      );
      expect(listed.configs.map((c) => c.id)).to.deep.equal([created.id]);
      // Another account sees none of them and cannot read or delete one.
      const others = await client.listTaskPushNotificationConfig(
        { taskId: id } as Parameters<Client["listTaskPushNotificationConfig"]>[0],
        withKey(strangerKey),
      );
      expect(others.configs).to.deep.equal([]);
      const stolen = await client
        .getTaskPushNotificationConfig({ taskId: id, id: created.id } as Parameters<Client["getTaskPushNotificationConfig"]>[0], withKey(strangerKey))
        .catch((e: unknown) => e);
      expect(stolen).to.be.instanceOf(Error);
      const anonymous = await client
        .createTaskPushNotificationConfig({ taskId: id, url: receiver.url } as Parameters<Client["createTaskPushNotificationConfig"]>[0])
        .catch((e: unknown) => e);
      expect(anonymous).to.be.instanceOf(Error);

      const outbound = webhookOutbound(s.hostedConfig);
      sender = createWebhookSender({ db: s.db, box: outbound.box!, fetch: outbound.fetch, retryDelaysMs: [50], timeoutMs: 1_000, pollMs: 20 });
      sender.start();
      await work(taskHash);
      await until(
        () => receiver.received.some((r) => JSON.parse(r.body).statusUpdate?.status?.state === "TASK_STATE_COMPLETED"),
        20_000,
        "the completed update",
      );
      for (const r of receiver.received) {
        expect(r.headers["x-a2a-notification-token"]).to.equal("poster-token");
        expect(JSON.parse(r.body).statusUpdate.taskId).to.equal(id);
        expect(r.headers["webhook-signature"]).to.match(/^v1,/);
      }
      expect(() =>
        new Webhook(`whsec_${Buffer.alloc(32).toString("base64")}`).verify(
          receiver.received[0]!.body,
          receiver.received[0]!.headers as Record<string, string>,
        ),
      ).to.throw();

      await client.deleteTaskPushNotificationConfig(
        { taskId: id, id: created.id } as Parameters<Client["deleteTaskPushNotificationConfig"]>[0],
        withKey(posterKey),
      );
      const after = await client.listTaskPushNotificationConfig(
        { taskId: id } as Parameters<Client["listTaskPushNotificationConfig"]>[0],
        withKey(posterKey),
      );
      expect(after.configs).to.deep.equal([]);
    } finally {
      await receiver.stop();
    }
  });
});
