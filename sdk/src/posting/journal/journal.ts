/** A run's journal over its port: locked, read and folded once, then appended to entry by entry (entries.ts). */
import { applyEntry, bindingMismatch, foldEntries, type JournalBinding, type NewEntry, type RowJournal } from "./entries";
import type { JournalPort } from "./ports";

export interface JournalWriter {
  /** The port's name for the journal (a file path...). */
  readonly path: string;
  readonly rows: Map<string, RowJournal>;
  /** The binding of the latest entries (none in a new or older journal). */
  readonly binding?: JournalBinding;
  /** Records one entry (after the run's binding, when it differs from the last one); resolves once it is durable. */
  append(entry: NewEntry): Promise<void>;
  /** Releases the journal's lock. */
  close(): Promise<void>;
}

/**
 * Opens the journal for a run: takes its lock and reads what earlier runs recorded. `bind` is recorded before the
 * run's first entry unless the journal's last binding is the same. `readOnly` (a dry run) takes no lock and records
 * nothing: entries only change what this run sees.
 */
export async function openJournal(port: JournalPort, options: { bind?: JournalBinding; readOnly?: boolean } = {}): Promise<JournalWriter> {
  if (options.readOnly) {
    const { rows, binding } = foldEntries(await port.read());
    return {
      path: port.name,
      rows,
      ...(binding ? { binding } : {}),
      append: (partial) => {
        applyEntry(rows, { ...partial, at: "" });
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    };
  }
  const release = await port.lock();
  try {
    const { rows, binding } = foldEntries(await port.read());
    const bind = options.bind;
    let unbound = bind !== undefined && (!binding || bindingMismatch(binding, bind) !== undefined || binding.api !== bind.api);
    // Appends are recorded one after the other, in the order they were asked for, whatever the port's latency.
    let last: Promise<void> = Promise.resolve();
    const record = async (partial: NewEntry) => {
      const at = new Date().toISOString();
      const entry = { ...partial, at };
      await port.append(unbound && bind ? [{ t: "bind", at, ...bind }, entry] : [entry]);
      unbound = false;
      applyEntry(rows, entry);
    };
    return {
      path: port.name,
      rows,
      ...(binding ? { binding } : {}),
      append(partial) {
        const next = last.catch(() => undefined).then(() => record(partial));
        last = next;
        return next;
      },
      close: async () => {
        await release();
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}
