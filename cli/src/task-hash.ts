import { clientError } from "../../sdk/src/errors";

/** A task is named by its hash: 0x and 64 hex characters. */
export function requireTaskHash(taskHash: string) {
  if (!/^0x[0-9a-fA-F]{64}$/.test(taskHash)) throw clientError("VALIDATION_FAILED", `a task hash is 0x and 64 hex characters, got ${taskHash}`);
}
