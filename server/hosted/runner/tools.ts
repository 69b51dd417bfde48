/**
 * The tools of a hosted agent: its HTTP tools (spec "HTTP tool definition") and the built-in ones every hosted agent
 * has (`send_message`, `read_inbox`, `wait_for_reply`, and with the sub-task payment option `delegate_to_agent`).
 * Every result is passed through the agent's redactor before the model sees it.
 */
import { getAddress, isAddress } from "ethers";
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { HttpTool } from "@market/core/api";
import { ApiError, type MarketClient } from "../../../sdk/src";
import type { Sandbox } from "../../sandbox";
import { wrapBriefKey } from "@market/core/crypto";
import { boundedFetch, truncate } from "./bounds";
import { redactUrls } from "@market/core/text";

/** Largest HTTP tool answer read (bytes). */
export const MAX_TOOL_RESPONSE_BYTES = 256 * 1024;
/** Longest a tool call waits: an HTTP tool's request, `wait_for_reply`, the result of `delegate_to_agent`. */
export const MAX_TOOL_WAIT_MS = 120_000;
/** How long a delegated private brief is wrapped to agents that bid on it (spec "Authentication" 10). */
export const DELEGATION_WRAP_WINDOW_MS = 120_000;
const POLL_MS = 2_000;

export interface ToolRunContext {
  agentId: number;
  /** Where JS Eval and Sandbox tools run (caps counted per `agentId`); without it they answer SANDBOX_UNAVAILABLE. */
  sandbox?: Sandbox;
  /** The task being worked. */
  taskHash: string;
  /** The agent's API client (its own token and wallet). */
  client: MarketClient;
  /** Tool secret by name, in memory while the agent runs. */
  secret(name: string): string | undefined;
  redact(text: string): string;
  allowPrivateNetworks: boolean;
  /** Raw units the sub-tasks of one task may carry in all (each one too); null: `delegate_to_agent` is off. */
  subtaskMaxReward: bigint | null;
  /** Epoch ms the task's budget ends. */
  deadline: number;
  now(): number;
  /** Keeps background work (wrapping a delegated brief to bidders) tied to the agent's life. */
  background(work: (signal: AbortSignal) => Promise<void>): void;
  /**
   * The task's sub-task ledger, in the database (over all its rounds and runs): `reserve` records a sub-task of
   * `amount` when the count and the total allow it, else answers why not; `listed` names the sub-task once listed.
   */
  subtasks: {
    reserve(amount: bigint): Promise<{ id: number } | { refused: string }>;
    listed(id: number, subtaskHash: string): Promise<void>;
    /** Why the sub-task may not be pinned to this agent (the task's poster or its account's), or undefined. */
    targetRefusal(agent: string): Promise<string | undefined>;
  };
}

const text = (description: string) => ({ type: "string", description });
const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[]): ChatCompletionFunctionTool => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties, required, additionalProperties: false } },
});

/** The built-in tools, as the model is told of them. */
export function builtinToolSpecs(subtasks: boolean): ChatCompletionFunctionTool[] {
  const tools = [
    fn(
      "send_message",
      "Send a message to the task's poster (about the current task) or to your owner.",
      { to: { type: "string", enum: ["poster", "owner"], description: "Who gets the message." }, body: text("The message, up to 4000 characters.") },
      ["to", "body"],
    ),
    fn(
      "read_inbox",
      "Read the latest messages from the task's poster and from your owner.",
      { from: { type: "string", enum: ["poster", "owner", "all"], description: "Whose messages; default all." } },
      [],
    ),
    fn(
      "wait_for_reply",
      "Wait for the next message from the poster or your owner (at most 120 seconds, and never past the task's time budget).",
      {
        from: { type: "string", enum: ["poster", "owner"], description: "Whose reply to wait for." },
        timeoutSeconds: { type: "integer", description: "How long to wait, 1 to 120." },
      },
      ["from"],
    ),
  ];
  if (subtasks) {
    tools.push(
      fn(
        "delegate_to_agent",
        "Post and fund a sub-task from your own wallet (USDC raw units, 6 decimals), pinned to one agent or open to all, and wait for its result. " +
          "Your owner's limit and a share of the task's reward bound all the sub-tasks of this task together (at most 3 of them), within a daily cap; never pin one to the task's poster or its agents. " +
          "Pass taskHash alone to read the result of a sub-task you posted earlier.",
        {
          instructions: text("The sub-task's brief (kept private: only the agents it is wrapped to can read it)."),
          amountRaw: text("Reward in raw units, e.g. 1000000 for 1 USDC."),
          agent: text("Optional 0x address of the only agent that may take it."),
          capabilities: { type: "array", items: { type: "string" }, description: "Optional capability tags the taker needs." },
          waitSeconds: { type: "integer", description: "How long to wait for the result, 0 to 120 (default 60)." },
          taskHash: text("Read an earlier sub-task's result instead of posting one."),
        },
        [],
      ),
    );
  }
  return tools;
}

/** An HTTP tool as the model sees it; a POST/PUT/PATCH tool with no inputs gets a free-form `input` body. */
export function httpToolSpec(tool: HttpTool): ChatCompletionFunctionTool {
  const properties: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(tool.parameters.properties)) {
    properties[name] = { type: p.type, description: p.description, ...(p.enum ? { enum: p.enum } : {}) };
  }
  const freeForm = Object.keys(properties).length === 0 && ["POST", "PUT", "PATCH"].includes(tool.method);
  if (freeForm) properties.input = { type: "string", description: "The request body (JSON or text)." };
  return fn(tool.name, tool.description, properties, tool.parameters.required ?? []);
}

/**
 * The origin an HTTP tool's URL template approves, the only one its secret is ever sent to (issue 23 item 3): the
 * template's scheme, host and port, written out before any `{placeholder}`. Undefined when a placeholder sits in the
 * scheme, user info, host or port (only the path and query may hold one): such a tool is refused at deploy, and one
 * stored before that rule never gets its secret.
 */
export function toolOrigin(template: string): string | undefined {
  const scheme = /^https?:\/\//i.exec(template);
  if (!scheme) return undefined;
  const rest = template.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  if (authority.length === 0 || authority.includes("{") || authority.includes("}")) return undefined;
  try {
    return new URL(`${scheme[0]}${authority}/`).origin;
  } catch {
    return undefined;
  }
}

/** Runs an HTTP tool: inputs mapped to path, query or body; the secret added as its auth says; the answer bounded. */
export async function callHttpTool(tool: HttpTool, args: Record<string, unknown>, ctx: ToolRunContext, signal: AbortSignal): Promise<string> {
  const mapping = tool.paramMapping ?? {};
  const headers: Record<string, string> = { accept: "application/json, text/plain;q=0.9, */*;q=0.1" };
  const auth = tool.auth ?? { type: "none" as const };
  if (auth.type === "bearer" || auth.type === "header") {
    const secret = auth.secretRef ? ctx.secret(auth.secretRef) : undefined;
    if (secret === undefined) return "Error: authentication failed";
    if (auth.type === "bearer") headers.authorization = `Bearer ${secret}`;
    else headers[(auth.keyName ?? "authorization").toLowerCase()] = secret;
  }
  let url = tool.url;
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  const declared = Object.keys(tool.parameters.properties);
  for (const name of declared) {
    const value = args[name];
    if (value === undefined) continue;
    const where = mapping[name];
    if (where === "path") {
      // encodeURIComponent leaves dots alone: "." or ".." would be a dot segment, moving the request (and the secret
      // it carries) up the URL's path.
      const segment = encodeURIComponent(String(value));
      if (segment === "." || segment === "..") return `Error: ${name} may not be "${segment}"`;
      url = url.split(`{${name}}`).join(segment);
    } else if (where === "query") query.set(name, String(value));
    else if (where === "body") body[name] = value;
    // `header` is accepted and dropped; an input with no mapping is never sent.
  }
  if (query.size > 0) url += `${url.includes("?") ? "&" : "?"}${query}`;
  // The secret goes to the origin approved at deploy and nowhere else (redirects are never followed: boundedFetch).
  const approved = toolOrigin(tool.url);
  let origin: string | undefined;
  try {
    origin = new URL(url).origin;
  } catch {
    origin = undefined;
  }
  if (approved === undefined || origin !== approved) return "Error: the tool's URL may only change in its path and query, never its host";
  let payload: string | undefined;
  if (declared.length === 0 && ["POST", "PUT", "PATCH"].includes(tool.method) && args.input !== undefined) {
    payload = typeof args.input === "string" ? args.input : JSON.stringify(args.input);
  } else if (Object.keys(body).length > 0) payload = JSON.stringify(body);
  if (payload !== undefined) headers["content-type"] = "application/json";
  const left = Math.min(MAX_TOOL_WAIT_MS, ctx.deadline - ctx.now());
  if (left <= 0) return "Error: the task's time budget ran out";
  const doFetch = boundedFetch({ maxBytes: MAX_TOOL_RESPONSE_BYTES, allowPrivateNetworks: ctx.allowPrivateNetworks });
  try {
    const response = await doFetch(url, {
      method: tool.method,
      headers,
      body: payload,
      signal: AbortSignal.any([signal, AbortSignal.timeout(left)]),
    });
    // Redacted whole before it is cut: a cut through a secret would leave its first characters unredacted.
    const answer = ctx.redact(await response.text());
    return `HTTP ${response.status}\n${truncate(answer, 6_000)}`;
  } catch (error) {
    return ctx.redact(`Error: the request failed: ${(error as Error).message}`);
  }
}

interface Message {
  id: number;
  body: string;
  createdAt: number;
  sender: string;
}

/** Runs the built-in tools against the API, as the agent (its own token). */
export function builtinTools(ctx: ToolRunContext) {
  const http = ctx.client.http;
  const agentPath = `/api/v1/agents/${ctx.agentId}/messages`;
  const taskPath = `/api/v1/a2a/tasks/${ctx.taskHash}/messages`;

  async function inbox(from: string): Promise<Array<Message & { from: "poster" | "owner" }>> {
    const out: Array<Message & { from: "poster" | "owner" }> = [];
    if (from !== "owner") {
      const me = (await http.get<{ addresses: string[] }>("/api/v1/api-keys/whoami")).addresses[0];
      const { messages } = await http.get<{ messages: Message[] }>(taskPath);
      for (const m of messages) if (m.sender !== me) out.push({ ...m, from: "poster" });
    }
    if (from !== "poster") {
      const { messages } = await http.get<{ messages: Message[] }>(agentPath);
      for (const m of messages) if (m.sender === "owner") out.push({ ...m, from: "owner" });
    }
    return out.sort((a, b) => a.createdAt - b.createdAt);
  }

  /** The id of this run's last message to each party: a reply is what that party wrote after it. */
  const lastSent: { poster?: number; owner?: number } = {};
  /** Messages the model has been shown (read_inbox, wait_for_reply): never a reply again. */
  const shown = new Set<string>();
  const keyOf = (m: Message & { from: string }) => `${m.from}:${m.id}`;

  const show = (messages: Array<Message & { from: string }>) => {
    for (const m of messages.slice(-20)) shown.add(keyOf(m));
    return ctx.redact(JSON.stringify(messages.slice(-20).map((m) => ({ from: m.from, body: m.body, at: new Date(m.createdAt).toISOString() }))));
  };

  async function wait(ms: number, signal: AbortSignal) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  async function sendMessage(args: Record<string, unknown>): Promise<string> {
    const body = ctx.redact(String(args.body ?? "")).slice(0, 4000);
    if (!body) return "Error: body is empty";
    if (args.to === "owner") {
      const sent = await http.post<Message>(agentPath, { body });
      lastSent.owner = sent.id;
      return `sent to the owner (message ${sent.id})`;
    }
    const sent = await http.post<Message>(taskPath, { body });
    lastSent.poster = sent.id;
    return `sent to the poster (message ${sent.id})`;
  }

  async function waitForReply(args: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    const from = args.from === "owner" ? "owner" : "poster";
    const seconds = Math.max(1, Math.min(120, Number(args.timeoutSeconds ?? 60) || 60));
    const until = Math.min(ctx.now() + seconds * 1000, ctx.deadline - 1000);
    // A reply is a message written after this run's last message to that party (even one that came before this call,
    // as a quick owner's does) and not shown to the model yet; with nothing sent, whatever comes from now on.
    const asked = lastSent[from];
    const before = asked === undefined ? new Set((await inbox(from)).map(keyOf)) : undefined;
    const isReply = (m: Message & { from: string }) => !shown.has(keyOf(m)) && (before ? !before.has(keyOf(m)) : m.id > asked!);
    if (asked !== undefined) {
      const already = (await inbox(from)).filter(isReply);
      if (already.length > 0) return show(already);
    }
    while (ctx.now() < until && !signal.aborted) {
      await wait(Math.min(POLL_MS, Math.max(0, until - ctx.now())), signal);
      const fresh = (await inbox(from)).filter(isReply);
      if (fresh.length > 0) return show(fresh);
    }
    return `no reply from the ${from} within ${seconds} seconds`;
  }

  async function subtaskResult(taskHash: string, waitMs: number, signal: AbortSignal): Promise<string> {
    const until = Math.min(ctx.now() + waitMs, ctx.deadline - 1000);
    for (;;) {
      let task;
      try {
        task = await ctx.client.getTask(taskHash);
      } catch (error) {
        // Listed a moment ago: the indexer has not seen the funding yet (a busy indexer, or another API process's).
        if (!(error instanceof ApiError && error.code === "TASK_NOT_FOUND")) throw error;
        // Posted and funded, not indexed yet when the wait ends: open, not an error (a model told its sub-task failed
        // would ask for another one).
        if (ctx.now() >= until || signal.aborted) return JSON.stringify({ taskHash, status: "open" });
        await wait(Math.min(POLL_MS, Math.max(0, until - ctx.now())), signal);
        continue;
      }
      const status = task.state.status;
      const output = task.state.resultData?.output;
      if (status === "verified" || status === "completed" || ["refunded", "cancelled"].includes(status) || ctx.now() >= until || signal.aborted) {
        return ctx.redact(
          JSON.stringify({ taskHash, status, ...(output !== undefined && (status === "verified" || status === "completed") ? { output } : {}) }),
        );
      }
      await wait(Math.min(POLL_MS, Math.max(0, until - ctx.now())), signal);
    }
  }

  /** While the window lasts, wraps the delegated brief's key to each agent that bids on it. */
  function wrapToBidders(taskHash: string, key: Uint8Array) {
    ctx.background(async (signal) => {
      const until = Date.now() + DELEGATION_WRAP_WINDOW_MS;
      const wrapped = new Set<string>();
      while (Date.now() < until && !signal.aborted) {
        await wait(POLL_MS, signal);
        try {
          const { bids } = await http.get<{ bids: Array<{ agent: string; publicKey: string | null }> }>(`/api/v1/a2a/tasks/${taskHash}/bids`);
          const fresh = bids.filter((b) => b.publicKey && !wrapped.has(b.agent));
          if (fresh.length === 0) continue;
          const wrappedKeys = Object.fromEntries(fresh.map((b) => [b.agent, wrapBriefKey(key, b.publicKey!)]));
          await http.post(`/api/v1/a2a/tasks/${taskHash}/keys`, { wrappedKeys });
          for (const b of fresh) wrapped.add(b.agent);
        } catch {
          // The next poll tries again.
        }
      }
      key.fill(0);
    });
  }

  async function delegate(args: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    if (ctx.subtaskMaxReward === null) return "Error: the sub-task payment option is off";
    const waitMs = Math.max(0, Math.min(120, Number(args.waitSeconds ?? 60) || 0)) * 1000;
    if (typeof args.taskHash === "string" && args.instructions === undefined) return subtaskResult(args.taskHash, waitMs, signal);
    const instructions = String(args.instructions ?? "").trim();
    if (!instructions) return "Error: instructions are empty";
    const amount = /^[0-9]{1,30}$/.test(String(args.amountRaw ?? "")) ? BigInt(String(args.amountRaw)) : 0n;
    if (amount <= 0n) return "Error: amountRaw must be a whole number of raw units above 0";
    if (amount > ctx.subtaskMaxReward) return `Error: amountRaw is above the owner's limit of ${ctx.subtaskMaxReward} per sub-task`;
    const agent = typeof args.agent === "string" && args.agent ? args.agent : undefined;
    if (agent !== undefined && !isAddress(agent)) return "Error: agent is not a 0x address";
    if (agent !== undefined) {
      const refused = await ctx.subtasks.targetRefusal(getAddress(agent));
      if (refused) return `Error: ${refused}`;
    }
    const capabilities = Array.isArray(args.capabilities) ? args.capabilities.filter((c): c is string => typeof c === "string") : [];
    // The count and the total per task (the owner's limit covers all of a task's sub-tasks, not each one).
    const reserved = await ctx.subtasks.reserve(amount);
    if ("refused" in reserved) return `Error: ${reserved.refused}`;
    let briefKey: Uint8Array | undefined;
    let naming: Promise<void> | undefined;
    try {
      const result = await ctx.client.postTasks(
        [
          {
            instructions,
            amountRaw: amount,
            privacy: "private",
            capabilities,
            durationSeconds: 3_600,
            ...(agent ? { targetExecutor: getAddress(agent) } : {}),
          },
        ],
        {
          onBriefKey: (event) => {
            briefKey = new Uint8Array(event.key);
            // Named at once, before it is funded and listed: an open sub-task is refused at accept to the parent's
            // poster and its account's agents, which the accept finds through this row.
            naming = ctx.subtasks.listed(reserved.id, event.taskHash).catch(() => undefined);
          },
        },
      );
      const row = result.results[0];
      if (!row || row.status !== "posted" || !row.taskHash)
        return ctx.redact(redactUrls(`Error: the sub-task was not posted: ${row?.error?.message ?? "unknown"}`));
      await naming;
      await ctx.subtasks.listed(reserved.id, row.taskHash);
      if (briefKey) wrapToBidders(row.taskHash, briefKey);
      return subtaskResult(row.taskHash, waitMs, signal);
    } catch (error) {
      const message = error instanceof ApiError ? `${error.code}: ${error.message}` : (error as Error).message;
      // An RPC provider's URL (and the key in it) never reaches the model (issue 23 item 7).
      return ctx.redact(redactUrls(`Error: the sub-task was not posted: ${message}`));
    }
  }

  return {
    async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string | undefined> {
      try {
        switch (name) {
          case "send_message":
            return await sendMessage(args);
          case "read_inbox": {
            const from = args.from === "poster" || args.from === "owner" ? args.from : "all";
            return show(await inbox(from));
          }
          case "wait_for_reply":
            return await waitForReply(args, signal);
          case "delegate_to_agent":
            return await delegate(args, signal);
          default:
            return undefined;
        }
      } catch (error) {
        const message = error instanceof ApiError ? `${error.code}: ${error.message}` : (error as Error).message;
        return ctx.redact(redactUrls(`Error: ${message}`));
      }
    },
  };
}
