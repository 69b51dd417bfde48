/**
 * The model side of a hosted agent: the official `openai` client pointed at the owner's OpenAI-compatible endpoint,
 * driven through a tool-call loop with a step limit and a time budget. Anything the endpoint does wrong (hangs, an
 * error status, a body that is not a chat completion) ends the loop with a ModelFailure.
 */
import OpenAI from "openai";
import type { ChatCompletionFunctionTool, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { boundedFetch, FetchRefused, truncate, type LookupFunction } from "./bounds";

/** Largest model answer read (bytes); a longer one fails the call. */
export const MAX_MODEL_RESPONSE_BYTES = 1024 * 1024;
/** A tool result is cut to this many characters before the model sees it. */
export const MAX_TOOL_RESULT_CHARS = 8_000;

export class ModelFailure extends Error {
  override readonly name = "ModelFailure";
}

export interface ModelEndpoint {
  baseUrl: string;
  name: string;
  apiKey?: string;
}

/**
 * The `openai` client for the owner's endpoint. Every request goes through `boundedFetch`: the private-network check
 * happens at connect time on the address connected to, for every connection the client opens.
 */
export function modelClient(endpoint: ModelEndpoint, options: { timeoutMs: number; allowPrivateNetworks: boolean; lookup?: LookupFunction }): OpenAI {
  return new OpenAI({
    baseURL: endpoint.baseUrl,
    // Some local servers take no key; the client insists on one.
    apiKey: endpoint.apiKey ?? "none",
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: options.timeoutMs,
    logLevel: "off",
    fetch: boundedFetch({
      maxBytes: MAX_MODEL_RESPONSE_BYTES,
      allowPrivateNetworks: options.allowPrivateNetworks,
      ...(options.lookup ? { lookup: options.lookup } : {}),
    }),
  });
}

export interface LoopOptions {
  client: OpenAI;
  model: string;
  messages: ChatCompletionMessageParam[];
  tools: ChatCompletionFunctionTool[];
  /** Runs one tool call; its answer (already free of secrets) goes back to the model. */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
  maxSteps: number;
  /** Epoch ms by which the loop must have an answer. */
  deadline: number;
  callTimeoutMs: number;
  /** Aborts everything (the agent stops). */
  signal: AbortSignal;
  /** Called before each model call; throws when the agent's model-call quota is used up. */
  beforeCall(): void;
  onStep?(step: number): void;
  now?: () => number;
}

/**
 * Calls the model until it answers without tool calls, at most `maxSteps` times and until `deadline`: each tool call
 * it asks for is run and its result sent back. The final text is the answer.
 */
export async function runToolLoop(options: LoopOptions): Promise<string> {
  const now = options.now ?? Date.now;
  const messages = [...options.messages];
  for (let step = 1; step <= options.maxSteps; step++) {
    const left = options.deadline - now();
    if (left <= 0) throw new ModelFailure("the task's time budget ran out");
    if (options.signal.aborted) throw new ModelFailure("the agent stopped");
    options.beforeCall();
    options.onStep?.(step);
    const signal = AbortSignal.any([options.signal, AbortSignal.timeout(Math.min(options.callTimeoutMs, left))]);
    let completion: unknown;
    try {
      completion = await options.client.chat.completions.create(
        { model: options.model, messages, ...(options.tools.length > 0 ? { tools: options.tools } : {}) },
        { signal, timeout: Math.min(options.callTimeoutMs, left), maxRetries: 0 },
      );
    } catch (error) {
      throw new ModelFailure(`the model call failed: ${describe(error)}`, { cause: error });
    }
    const message = assistantMessage(completion);
    const calls = (message.tool_calls ?? []).filter((c) => c.type === "function").map((c) => ({ ...c, type: "function" as const }));
    if (calls.length === 0) {
      const text = typeof message.content === "string" ? message.content.trim() : "";
      if (text.length === 0) throw new ModelFailure("the model answered no text and no tool call");
      return text;
    }
    messages.push({ role: "assistant", content: typeof message.content === "string" ? message.content : null, tool_calls: calls });
    for (const call of calls) {
      let args: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(call.function.arguments || "{}");
        args = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
      } catch {
        messages.push({ role: "tool", tool_call_id: call.id, content: "Error: the arguments are not a JSON object." });
        continue;
      }
      let result: string;
      try {
        result = await options.callTool(call.function.name, args, options.signal);
      } catch (error) {
        result = `Error: ${(error as Error).message}`;
      }
      messages.push({ role: "tool", tool_call_id: call.id, content: truncate(result, MAX_TOOL_RESULT_CHARS) });
    }
  }
  throw new ModelFailure(`no answer within ${options.maxSteps} model calls`);
}

interface ToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

/** The first choice's message, checked field by field: an endpoint's garbage never reaches the loop. */
function assistantMessage(completion: unknown): { content: unknown; tool_calls?: ToolCall[] } {
  const choices = (completion as { choices?: unknown } | null)?.choices;
  const message = Array.isArray(choices) ? (choices[0] as { message?: unknown } | undefined)?.message : undefined;
  if (message === null || typeof message !== "object") throw new ModelFailure("the model's answer is not a chat completion (no choices[0].message)");
  const { content, tool_calls: toolCalls } = message as { content?: unknown; tool_calls?: unknown };
  if (toolCalls === undefined || toolCalls === null) return { content };
  if (!Array.isArray(toolCalls)) throw new ModelFailure("the model's tool_calls is not a list");
  const calls = toolCalls.map((c: unknown): ToolCall => {
    const call = c as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    if (typeof call?.id !== "string" || typeof call.function?.name !== "string") throw new ModelFailure("the model's tool call has no id or name");
    return {
      id: call.id,
      type: typeof call.type === "string" ? call.type : "function",
      function: { name: call.function.name, arguments: typeof call.function.arguments === "string" ? call.function.arguments : "{}" },
    };
  });
  return { content, tool_calls: calls };
}

function describe(error: unknown): string {
  if (error instanceof OpenAI.APIError && error.cause instanceof FetchRefused) return `refused: ${error.cause.message}`;
  if (error instanceof OpenAI.APIError) return `${error.status ?? "no status"} ${error.name}`;
  if (error instanceof Error) return error.message.slice(0, 300);
  return String(error).slice(0, 300);
}
