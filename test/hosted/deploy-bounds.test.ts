/**
 * Issue 23 item 2: one deploy request froze the API. Every `toolSecrets` entry was sealed (ECIES) on the event loop with
 * no bound on their number; past 5,461 the insert failed with a 500 after all the sealing, storing nothing and
 * counting nothing, so it could be replayed. Now the body's counts are bounded, each with its code, before anything is
 * counted, paid or sealed; the owner's copies are sealed on a worker thread. The event loop's longest stall during
 * the attack (3,000 one-byte secrets) and during the largest deploy allowed is measured and printed.
 */
import { expect } from "chai";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, privateKeyOf, type TestServer } from "../server/harness";
import { expectError, expectOk } from "../server/expect";
import { openSealed, publicKeyFromPrivateKey, sealToPublicKey } from "@market/core/crypto";
import type { ErrorCode } from "@market/core/errors";
import { MAX_PARAM_MAPPINGS, MAX_TOOL_PARAMETERS, MAX_TOOL_SECRETS, MAX_TOOLS } from "../../server/hosted/deploy-bounds";
import { sealCopiesOffLoop } from "../../server/hosted/sealer";

/** The longest gap between 1 ms ticks while `work` runs: how long the event loop was blocked at most. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const at = performance.now();
    stallMs = Math.max(stallMs, at - last);
    last = at;
  }, 1);
  try {
    const result = await work();
    return { result, stallMs: Math.max(stallMs, performance.now() - last) };
  } finally {
    clearInterval(ticker);
  }
}

const tool = (name: string, parameters: number, mappings = 0) => ({
  name,
  description: "Looks something up.",
  method: "GET",
  url: "https://tools.example.com/lookup",
  parameters: {
    type: "object",
    properties: Object.fromEntries(Array.from({ length: parameters }, (_, i) => [`p${i}`, { type: "string", description: "An input." }])),
  },
  paramMapping: Object.fromEntries(Array.from({ length: mappings }, (_, i) => [`p${i}`, "query"])),
});

describe("hosted agents: deploy body bounds and sealing off the event loop (issue 23 item 2)", function () {
  this.timeout(120_000);
  let s: TestServer;
  let owner: HardhatEthersSigner;
  let ownerKey: string;

  before(async function () {
    s = await startTestServer({ hosted: { deploysPerHour: 2 } });
    owner = s.stranger;
    ownerKey = await s.apiKeyFor(owner);
  });
  after(async function () {
    await s.close();
  });

  const body = (extra: Record<string, unknown> = {}) => ({
    displayName: "Bounded agent",
    instructions: "Answer briefly.",
    model: { baseUrl: "https://models.example.com/v1", name: "m", apiKey: "sk-never-shown" },
    ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(owner)),
    start: false,
    ...extra,
  });
  const deploy = (extra: Record<string, unknown>) =>
    s.call<{ agent: { id: number } }>("POST", "/api/v1/agents", { key: ownerKey, body: body(extra) });
  const stored = async () => ({
    agents: (await s.db.selectFrom("hosted_agents").select("id").execute()).length,
    secrets: (await s.db.selectFrom("hosted_agent_secrets").select("name").execute()).length,
  });

  it("refuses the issue's attack (3,000 one-byte secrets) at once with TOO_MANY_TOOL_SECRETS: nothing sealed, stored or counted", async function () {
    const toolSecrets = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`s${i}`, "x"]));
    const { result, stallMs } = await longestStall(() => deploy({ toolSecrets }));
    console.log(`      issue 23 item 2: 3,000 secrets answered ${result.status}; longest event-loop stall ${stallMs.toFixed(1)} ms`);
    expectError(result, "TOO_MANY_TOOL_SECRETS");
    expect(result.body.error.details).to.deep.equal([{ field: "body.toolSecrets", message: `at most ${MAX_TOOL_SECRETS}` }]);
    expect(stallMs).to.be.below(1_000);
    expect(await stored()).to.deep.equal({ agents: 0, secrets: 0 });
    // The refusal counted nothing: the two deploys of the hour remain (the third is refused by the window).
    expectOk(await deploy({}));
    const { result: largest, stallMs: largestStall } = await longestStall(() =>
      deploy({
        toolSecrets: Object.fromEntries(Array.from({ length: MAX_TOOL_SECRETS }, (_, i) => [`s${i}`, `secret-value-${i}`])),
      }),
    );
    expectOk(largest);
    console.log(`      issue 23 item 2: the largest deploy allowed (${MAX_TOOL_SECRETS + 2} secrets): longest stall ${largestStall.toFixed(1)} ms`);
    expect(await stored()).to.deep.equal({ agents: 2, secrets: 1 + 1 + 1 + 1 + MAX_TOOL_SECRETS });
    expectError(await deploy({}), "RATE_LIMITED");
  });

  it("seals the owner's copies on a worker thread: the event loop keeps ticking while hundreds are sealed, and each opens", async function () {
    const ownerPrivateKey = privateKeyOf(owner);
    const publicKey = publicKeyFromPrivateKey(ownerPrivateKey);
    const values = Array.from({ length: 400 }, (_, i) => `secret-${i}`);
    sealToPublicKey(Buffer.from("warm-up"), publicKey);
    // The same copies made on the event loop, for scale: the stall the worker thread takes off it.
    const { stallMs: onLoopMs } = await longestStall(async () => values.map((v) => sealToPublicKey(Buffer.from(v, "utf8"), publicKey)));
    await sealCopiesOffLoop(["warm-up"], publicKey); // the thread's start-up is not what is measured
    const { result: sealed, stallMs } = await longestStall(() => sealCopiesOffLoop(values, publicKey));
    console.log(`      issue 23 item 2: 400 ECIES copies: ${onLoopMs.toFixed(0)} ms stall on the event loop, ${stallMs.toFixed(1)} ms off it`);
    expect(sealed.map((copy) => Buffer.from(openSealed(copy, ownerPrivateKey)).toString("utf8"))).to.deep.equal(values);
    expect(stallMs).to.be.below(onLoopMs / 2);
  });

  it("refuses too many tools, parameters or mappings, each with its code and field", async function () {
    const cases: Array<[Record<string, unknown>, ErrorCode, string, number]> = [
      [{ tools: Array.from({ length: MAX_TOOLS + 1 }, (_, i) => tool(`t${i}`, 1)) }, "TOO_MANY_TOOLS", "body.tools", MAX_TOOLS],
      [{ tools: [tool("wide", MAX_TOOL_PARAMETERS + 1)] }, "TOO_MANY_TOOL_PARAMETERS", "body.tools.0.parameters.properties", MAX_TOOL_PARAMETERS],
      [
        {
          tools: [
            tool("ok", 1),
            {
              ...tool("mapped", MAX_TOOL_PARAMETERS, MAX_PARAM_MAPPINGS),
              paramMapping: { ...tool("m", 0, MAX_PARAM_MAPPINGS).paramMapping, extra: "body" },
            },
          ],
        },
        "TOO_MANY_PARAM_MAPPINGS",
        "body.tools.1.paramMapping",
        MAX_PARAM_MAPPINGS,
      ],
    ];
    for (const [extra, code, field, limit] of cases) {
      const answer = await deploy(extra);
      expectError(answer, code);
      expect(answer.body.error.details, code).to.deep.equal([{ field, message: `at most ${limit}` }]);
    }
    expect((await stored()).agents).to.equal(2);
  });

  it("refuses a tool URL with a placeholder in its host or port (issue 23 item 3), naming the field", async function () {
    // Each placeholder is a declared input mapped to the path, so only the rule on where a placeholder may sit refuses it.
    for (const [url, input] of [
      ["http://{host}:8080/v1/records", "host"],
      ["https://api.example.com:{port}/v1", "port"],
      ["https://{sub}.example.com/v1", "sub"],
    ] as const) {
      const lookup = {
        ...tool("lookup", 0),
        url,
        parameters: { type: "object", properties: { [input]: { type: "string", description: "Where." } } },
        paramMapping: { [input]: "path" },
      };
      const answer = await deploy({ tools: [lookup] });
      expectError(answer, "VALIDATION_FAILED");
      expect(answer.body.error.details, url).to.deep.equal([
        { field: "body.tools.0.url", message: "may have {placeholders} only in its path and query, never in its scheme, host or port" },
      ]);
    }
    expect((await stored()).agents).to.equal(2);
  });
});
