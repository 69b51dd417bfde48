/**
 * The escrow's funding calls encoded without the ABI coder (issue 30): createTask and createTasks take only static
 * words (a task hash, two addresses, an amount, a duration), so their calldata is the selector and each word in order
 * (createTasks: the array's offset and length first). ethers' coder checksums every address (a Keccak each) and checks
 * every value, about 4 ms per 20-task batch, which the API's build of each chunk and the client's check of it both
 * paid. The same bytes as `encodeFunctionData` (test/core/escrow-calldata.test.ts); any value the coder refuses (out of
 * its type's range, an address with a wrong checksum) is handed to it, which refuses it as before.
 */
import { getAddress } from "ethers";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";

/** One task of a funding: what createTask takes, and each element of createTasks. */
export interface FundingParams {
  taskHash: string;
  token: string;
  amount: bigint;
  duration: bigint;
  verifier: string;
}

const escrow = TaskEscrow__factory.createInterface();
const CREATE_TASK = escrow.getFunction("createTask").selector;
const CREATE_TASKS = escrow.getFunction("createTasks").selector;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Mixed-case addresses whose checksum was found right (the token of every task of a run, mostly): checked once. */
const checksummed = new Set<string>();

/**
 * An address the coder takes: 40 hex digits, in one case or with a right checksum (EIP-55), as the coder checks it
 * (a Keccak of each mixed-case one, once).
 */
function addressOk(a: string): boolean {
  if (!ADDRESS.test(a)) return false;
  const digits = a.slice(2);
  if (digits === digits.toLowerCase() || digits === digits.toUpperCase() || checksummed.has(a)) return true;
  if (getAddress(a.toLowerCase()) !== a) return false;
  if (checksummed.size >= 1024) checksummed.clear();
  checksummed.add(a);
  return true;
}

/** The task's five words, lowercase hex without 0x; undefined when a value is one the coder refuses. */
function words(p: FundingParams): string | undefined {
  if (!BYTES32.test(p.taskHash) || !addressOk(p.token) || !addressOk(p.verifier)) return undefined;
  if (p.amount < 0n || p.amount >= 1n << 256n || p.duration < 0n || p.duration >= 1n << 64n) return undefined;
  const address = (a: string) => a.slice(2).toLowerCase().padStart(64, "0");
  return (
    p.taskHash.slice(2).toLowerCase() +
    address(p.token) +
    p.amount.toString(16).padStart(64, "0") +
    p.duration.toString(16).padStart(64, "0") +
    address(p.verifier)
  );
}

/** The calldata of createTask for one task, of createTasks for several (or none). */
export function fundingCalldata(tasks: readonly FundingParams[]): string {
  const encoded = tasks.map(words);
  if (encoded.every((w): w is string => w !== undefined)) {
    if (tasks.length === 1) return `${CREATE_TASK}${encoded[0]}`;
    const word = (n: number) => n.toString(16).padStart(64, "0");
    return `${CREATE_TASKS}${word(32)}${word(tasks.length)}${encoded.join("")}`;
  }
  const single = tasks.length === 1 ? tasks[0]! : undefined;
  return single
    ? escrow.encodeFunctionData("createTask", [single.taskHash, single.token, single.amount, single.duration, single.verifier])
    : escrow.encodeFunctionData("createTasks", [tasks.map((t) => ({ ...t }))]);
}
