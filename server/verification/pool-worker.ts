/**
 * The thread of the verification pool (server/verification/pool.ts): evaluates one output at a time with the rule
 * engine and answers its verdict. Loaded by the pool's bootstrap; nothing else imports it.
 */
import { parentPort } from "node:worker_threads";
import { evaluate } from "@market/core/verification";
import type { EvaluationRequest, EvaluationReply } from "./pool";

parentPort?.on("message", (request: EvaluationRequest) => {
  let reply: EvaluationReply;
  try {
    reply = { id: request.id, verdict: evaluate(request.output, request.criteria, { brief: request.brief }) };
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort?.postMessage(reply);
});
// Loaded (under ts-node, compiled): the pool starts counting budgets from here.
parentPort?.postMessage({ ready: true });
