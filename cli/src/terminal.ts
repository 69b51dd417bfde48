/**
 * What the CLI says and asks: reports on stdout, errors, notes and progress on stderr. The bar and the question need
 * a terminal; without one, progress is a plain line per step (a chunk of rows) and a question is never asked. With
 * `--json`, stdout carries only the command's JSON answer (`data`); the report lines go to stderr with the notes.
 */
import { createInterface } from "node:readline/promises";

export interface Terminal {
  /** A line of the report (stdout; stderr with --json). */
  say(line?: string): void;
  /** A note or an error line (stderr). */
  note(line: string): void;
  /** The command's answer as JSON on stdout, with --json only (amounts and other bigints as strings). */
  data(value: unknown): void;
  /** Whether --json was given. */
  readonly json: boolean;
  /** Whether the user can answer a question (stdin and stderr are terminals). */
  readonly interactive: boolean;
  /** Asks once, y/N; anything but y or yes is no. */
  confirm(question: string): Promise<boolean>;
  /**
   * Progress on stderr: a bar on a terminal; otherwise a line `<label>: <done>/<total>` each time `step` more are done
   * (a chunk of rows), and at the end.
   */
  progress(total: number, label: string, step?: number): Progress;
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

/** JSON text of a command's answer: bigints as decimal strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2);
}

export function createTerminal(redact: (text: string) => string = (t) => t, options: { json?: boolean } = {}): Terminal {
  const stderrIsTty = process.stderr.isTTY === true;
  const json = options.json === true;
  let bar: { clear(): void } | undefined;
  const write = (stream: NodeJS.WriteStream, line: string) => {
    bar?.clear();
    stream.write(`${redact(line)}\n`);
  };
  return {
    say: (line = "") => write(json ? process.stderr : process.stdout, line),
    note: (line) => write(process.stderr, line),
    data: (value) => {
      if (json) process.stdout.write(`${redact(toJson(value))}\n`);
    },
    json,
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
    progress(total, label, step = 1) {
      if (total === 0) return { update() {}, end() {} };
      if (!stderrIsTty) {
        // No terminal (a pipe, a log file, CI): one line per step, never a carriage-return bar.
        let shown = 0;
        const line = (done: number) => {
          shown = done;
          process.stderr.write(`${redact(`${label}: ${done}/${total}`)}\n`);
        };
        return {
          update(done) {
            if (done - shown >= Math.max(1, step) || (done === total && shown !== total)) line(done);
          },
          end() {},
        };
      }
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
