/**
 * OpenAPI import: a real 3.0 document (operations with path, query and header parameters, a JSON body, an API key in
 * a header and an HTTP bearer scheme) becomes drafts mapped as the spec says; a draft holds only a path, so it cannot
 * be deployed unreviewed; confirmed (its URL made full) it runs in a paid task. Refusals: YAML, Swagger 2, 3.1-only
 * constructs, over 10 MB.
 */
import { expect } from "chai";
import type { Stack } from "../support/stack";
import type { ModelRequest, ModelServer } from "../support/model-server";
import { expectError, expectOk } from "../server/expect";
import { agentOptions, keyedClientOf, startedAgent, statusOf, until, sharedStackAndModel } from "./helpers";

const toolResults = (request: ModelRequest) => request.messages.filter((m) => m.role === "tool").map((m) => m.content ?? "");

const PETSTORE = {
  openapi: "3.0.3",
  info: { title: "Pets", version: "1.0.0" },
  servers: [{ url: "https://pets.example.com" }],
  components: {
    securitySchemes: {
      petKey: { type: "apiKey", in: "header", name: "X-Pet-Key" },
      adminToken: { type: "http", scheme: "bearer" },
      cookieAuth: { type: "apiKey", in: "cookie", name: "sid" },
    },
    parameters: { PetId: { name: "petId", in: "path", required: true, description: "The pet's id.", schema: { type: "integer" } } },
    schemas: {
      NewPet: {
        type: "object",
        required: ["name"],
        properties: { name: { type: "string", description: "The pet's name." }, kind: { type: "string", enum: ["cat", "dog"] } },
      },
    },
  },
  security: [{ petKey: [] }],
  paths: {
    "/tools/pets/{petId}": {
      parameters: [{ $ref: "#/components/parameters/PetId" }],
      get: {
        operationId: "getPet",
        summary: "Find a pet by id.",
        parameters: [
          { name: "verbose", in: "query", schema: { type: "boolean" }, description: "Every detail." },
          { name: "trace_id", in: "header", schema: { type: "string" } },
        ],
      },
    },
    "/tools/pets": {
      post: {
        operationId: "createPet",
        summary: "Add a pet.",
        security: [{ adminToken: [] }],
        requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/NewPet" } } } },
      },
      get: { operationId: "list-pets", summary: "List pets.", security: [{ cookieAuth: [] }] },
    },
  },
};

describe("hosted agents: OpenAPI import", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  sharedStackAndModel((stack, server) => ((s = stack), (model = server)));

  it("drafts a 3.0 document's operations as the spec maps them; confirmed, a draft runs in a paid task", async function () {
    const { key } = await keyedClientOf(s, s.stranger);
    const imported = expectOk(
      await s.call<{ drafts: Array<{ tool: Record<string, unknown>; review: string[] }>; servers: string[] }>(
        "POST",
        "/api/v1/tools/import-openapi",
        {
          key,
          body: { document: JSON.stringify(PETSTORE) },
        },
      ),
    );
    expect(imported.servers).to.deep.equal(["https://pets.example.com"]);
    const byName = (name: string) => imported.drafts.find((d) => d.tool.name === name)!;
    expect(imported.drafts.map((d) => d.tool.name)).to.deep.equal(["getPet", "list_pets", "createPet"]);
    const [getPet, createPet, listPets] = ["getPet", "createPet", "list_pets"].map((n) => byName(n).tool);
    expect(getPet).to.deep.equal({
      type: "http",
      name: "getPet",
      description: "Find a pet by id.",
      parameters: {
        type: "object",
        properties: {
          petId: { type: "integer", description: "The pet's id." },
          verbose: { type: "boolean", description: "Every detail." },
          trace_id: { type: "string", description: "trace_id" },
        },
        required: ["petId"],
      },
      method: "GET",
      url: "/tools/pets/{petId}",
      paramMapping: { petId: "path", verbose: "query", trace_id: "header" },
      auth: { type: "header", keyName: "X-Pet-Key", secretRef: "petKey" },
    });
    expect(createPet).to.deep.include({
      name: "createPet",
      method: "POST",
      url: "/tools/pets",
      auth: { type: "bearer", keyName: "Authorization", secretRef: "adminToken" },
    });
    expect(createPet!.paramMapping).to.deep.equal({ name: "query", kind: "query" });
    expect(createPet!.parameters).to.deep.equal({
      type: "object",
      properties: { name: { type: "string", description: "The pet's name." }, kind: { type: "string", enum: ["cat", "dog"], description: "kind" } },
      required: ["name"],
    });
    expect(listPets).to.deep.include({ name: "list_pets", method: "GET" });
    expect(listPets).to.not.have.property("auth");
    expect(byName("list_pets").review.join(" ")).to.include("cookieAuth is not understood");

    // Unreviewed, a draft cannot be deployed: its URL is a path.
    const unreviewed = await s.call("POST", "/api/v1/agents", {
      key,
      body: { ...agentOptions(model), ownerPublicKey: "04".padEnd(130, "1"), tools: [getPet] },
    });
    expectError(unreviewed, "VALIDATION_FAILED");

    // Confirmed (its URL made full, its secret given at deploy): the model calls it during a paid task.
    model.setTool((request) => ({ body: JSON.stringify({ pet: "Rex", path: request.path, key: request.headers["x-pet-key"] === "pet-secret" }) }));
    model.setScript((request) => {
      if (request.model !== "pets") return { content: "wrong model" };
      const results = toolResults(request);
      if (results.length === 0) return { toolCalls: [{ name: "getPet", arguments: { petId: 7, verbose: true, trace_id: "t-1" } }] };
      return { content: `Pet report from the API: ${results[0]}` };
    });
    const confirmed = { ...getPet, url: `${model.origin}${getPet!.url as string}` };
    const { agent } = await startedAgent(
      s,
      s.stranger,
      agentOptions(model, { model: { baseUrl: model.baseUrl, name: "pets" }, tools: [confirmed as never], toolSecrets: { petKey: "pet-secret" } }),
    );
    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const { taskHash } = await poster.postTask({
      instructions: "Report on pet 7.",
      amountRaw: 1_000_000n,
      privacy: "public",
      capabilities: ["summarization"],
      targetExecutor: agent.address,
    });
    await until(async () => (await statusOf(s, posterKey, taskHash!)).status === "verified", 60_000, "the task verified");
    const output = (await statusOf(s, posterKey, taskHash!)).output!;
    expect(output).to.include('"path":"/tools/pets/7?verbose=true"').and.include('"key":true');
    // The header parameter was dropped, the secret sent only as the scheme's header, never to the model.
    const call = model.toolRequests.find((r) => r.path.startsWith("/tools/pets/7"))!;
    expect(call.headers.trace_id).to.equal(undefined);
    expect(JSON.stringify(model.requests)).to.not.include("pet-secret");
  });

  it("refuses YAML, Swagger 2, 3.1-only constructs and a document over 10 MB, each with its code", async function () {
    const { key } = await keyedClientOf(s, s.stranger);
    const send = (document: string) => s.call<never>("POST", "/api/v1/tools/import-openapi", { key, body: { document } });
    const cases: Array<[string, string]> = [
      ["openapi: 3.0.0\ninfo:\n  title: Pets\n", "YAML"],
      ["{ not json", "NOT_JSON"],
      [JSON.stringify({ swagger: "2.0", paths: {} }), "NOT_OPENAPI_3"],
      [JSON.stringify({ ...PETSTORE, openapi: "3.1.0", webhooks: {} }), "UNSUPPORTED_3_1"],
      [
        JSON.stringify({
          openapi: "3.1.0",
          paths: { "/x": { get: { operationId: "x", parameters: [{ name: "q", in: "query", schema: { type: ["string", "null"] } }] } } },
        }),
        "UNSUPPORTED_3_1",
      ],
      [JSON.stringify({ openapi: "3.0.0", paths: {} }), "NO_OPERATIONS"],
    ];
    for (const [document, reason] of cases) {
      const answer = await send(document);
      expectError(answer, "TOOL_IMPORT_INVALID");
      expect((answer.body as { error: { reason?: string } }).error.reason).to.equal(reason);
    }
    const huge = JSON.stringify({ ...PETSTORE, "x-padding": "x".repeat(10 * 1024 * 1024) });
    expectError(await send(huge), "TOOL_IMPORT_TOO_LARGE");
    const { key: other } = await keyedClientOf(s, s.worker);
    expectError(await s.call("POST", "/api/v1/tools/import-openapi", { body: { document: "{}" } }), "AUTH_REQUIRED");
    expectOk(await s.call("POST", "/api/v1/tools/import-openapi", { key: other, body: { document: JSON.stringify(PETSTORE) } }));
  });
});
