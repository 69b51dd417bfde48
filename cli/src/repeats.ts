/**
 * Rows a task file would pay for again (the engine's `findRepeats`: private rows this wallet already funded from a task
 * file, confirmed on chain), shown before anything is asked; paid for again only when the user says so.
 */
import { clientError } from "../../sdk/src/errors";
import type { Repeat } from "../../sdk/src/posting/journal";
import type { Terminal } from "./terminal";

export function showRepeats(terminal: Terminal, repeats: readonly Repeat[]) {
  if (repeats.length === 0) return;
  terminal.say(`already paid for by this wallet from a task file (a copy of one?): ${repeats.length} private row(s) below would be paid again`);
  for (const { row, earlier } of repeats.slice(0, 5)) {
    terminal.say(`  line ${row.line}: as ${earlier.file} line ${earlier.line} on ${earlier.at.slice(0, 10)}, task ${earlier.taskHash}`);
  }
  if (repeats.length > 5) terminal.say(`  ... and ${repeats.length - 5} more`);
}

/** Paying again for rows already funded takes its own yes (or --allow-repost); --yes alone does not. */
export async function confirmRepost(flags: { allowRepost?: boolean }, terminal: Terminal, count: number) {
  if (flags.allowRepost) {
    terminal.note(`note: paying again for ${count} private row(s) already funded by this wallet (--allow-repost).`);
    return;
  }
  const refusal = `${count} private row(s) of this file were already paid for by this wallet from a task file (lines above); nothing was sent.`;
  if (!terminal.interactive) throw clientError("ALREADY_FUNDED", `${refusal} Pass --allow-repost to pay for them again.`);
  if (!(await terminal.confirm(`Pay again for the ${count} private row(s) already paid for?`))) throw clientError("ALREADY_FUNDED", refusal);
}
