import { asAddress, asTaskHash, type Address, type TaskHash } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { parseAgentAddress } from "@market/core/task-fields";

/**
 * A 0x address from a path or a body field, checksummed: any letter case, but a mixed-case one must carry a valid
 * checksum, and the zero address is no agent. Else `INVALID_ADDRESS`, naming the field when given.
 */
export function addressParam(text: string, field?: string): Address {
  const address = parseAgentAddress(text);
  if (address.ok) return asAddress(address.value);
  throw new MarketError(
    "INVALID_ADDRESS",
    field ? `${field}: ${address.message}` : address.message,
    field ? { details: [{ field, message: address.message }] } : {},
  );
}

/** A task hash from a path or a body, lowercase. A numeric task id is refused with its own code. */
export function taskHashParam(text: string): TaskHash {
  if (/^[0-9]+$/.test(text)) throw new MarketError("TASK_ID_NOT_SUPPORTED");
  if (!/^0x[0-9a-fA-F]{64}$/.test(text)) throw new MarketError("INVALID_TASK_HASH");
  return asTaskHash(text);
}
