/**
 * What the CLI says and asks: reports on stdout, errors, notes and the progress bar on stderr. The bar and the
 * question need a terminal; without one the bar stays silent and a question is never asked.
 */
import { createInterface } from "node:readline/promises";

export interface Terminal {
  /** A line of the report (stdout). */
  say(line?: string): void;
  /** A note or an error line (stderr). */
  note(line: string): void;
  /** Whether the user can answer a question (stdin and stderr are terminals). */
  readonly interactive: boolean;
  /** Asks once, y/N; anything but y or yes is no. */
  confirm(question: string): Promise<boolean>;
  /** A progress bar on stderr when it is a terminal; a no-op otherwise. */
  progress(total: number, label: string): Progress;
  /** A status line on stderr: rewritten in place on a terminal; without one, each new text is a note of its own. */
  status(): StatusLine;
}

export interface StatusLine {
  update(text: string): void;
  end(): void;
}

export interface Progress {
  update(done: number): void;
  end(): void;
}

export function createTerminal(redact: (text: string) => string = (t) => t): Terminal {
  const stderrIsTty = process.stderr.isTTY === true;
  let bar: { clear(): void } | undefined;
  const write = (stream: NodeJS.WriteStream, line: string) => {
    bar?.clear();
    stream.write(`${redact(line)}\n`);
  };
  return {
    say: (line = "") => write(process.stdout, line),
    note: (line) => write(process.stderr, line),
    interactive: process.stdin.isTTY === true && stderrIsTty,
    async confirm(question) {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const answer = await rl.question(`${question} [y/N] `);
        return /^(y|yes)$/i.test(answer.trim());
      } finally {
        rl.close();
      }
    },
    status() {
      let shown = "";
      if (!stderrIsTty) {
        return {
          update(text) {
            if (text !== shown) write(process.stderr, (shown = text));
          },
          end() {},
        };
      }
      const clear = () => {
        if (shown) process.stderr.write(`\r${" ".repeat(shown.length)}\r`);
        shown = "";
      };
      bar = { clear };
      return {
        update(text) {
          clear();
          shown = redact(text);
          process.stderr.write(shown);
        },
        end() {
          clear();
          bar = undefined;
        },
      };
    },
    progress(total, label) {
      if (!stderrIsTty || total === 0) return { update() {}, end() {} };
      const width = 30;
      let last = "";
      const draw = (done: number) => {
        const filled = Math.round((done / total) * width);
        last = `\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total} ${label}`;
        process.stderr.write(last);
      };
      const clear = () => {
        if (last) process.stderr.write(`\r${" ".repeat(last.length)}\r`);
        last = "";
      };
      let current = 0;
      bar = {
        clear() {
          clear();
          // Redrawn on the next update.
        },
      };
      draw(0);
      return {
        update(done) {
          current = done;
          draw(current);
        },
        end() {
          clear();
          bar = undefined;
        },
      };
    },
  };
}
