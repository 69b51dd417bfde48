#!/usr/bin/env node
/**
 * `market`: the marketplace from a terminal. Post a spreadsheet of tasks (and finish a run that stopped), follow your
 * tasks, rent a hosted agent's service, judge a result, settle (cancel, dispute, release), manage API keys. Configured
 * by the environment; see `market --help`. `--json` on any command prints its answer as JSON on stdout (the report goes
 * to stderr).
 *
 * Exit status: 0 done; 1 refused or failed (`error CODE: message` on stderr); 2 bad arguments; 3 NOT_ALL_POSTED
 * (a run ended with rows a rerun can still post: rerun the same command).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { ApiError } from "../../sdk/src/errors";
import { parseUsdcDecimal } from "@market/core/money";
import { readConfig, redact, secretsOf, type CliConfig, type GlobalFlags } from "./config";
import { postTasksCommand, type PostTasksFlags, type PostTasksHooks } from "./post-tasks";
import { finishPostsCommand, type FinishPostsFlags } from "./finish-posts";
import { reviewCommand, type ReviewFlags } from "./review";
import { actionCommand, cancelCommand } from "./settle";
import { statusCommand, tasksCommand, type TasksFlags } from "./tasks";
import { keysCreateCommand, keysListCommand, keysRevokeCommand } from "./keys";
import {
  skillsCreateCommand,
  skillsImportCommand,
  skillsInstallCommand,
  skillsListCommand,
  skillsRemoveCommand,
  type SkillsImportFlags,
  type SkillsListFlags,
} from "./skills";
import { mcpCommand, type McpFlags } from "./mcp";
import { mcpClientConfig } from "./mcp-config";
import { rentCommand, servicesCommand, type RentFlags, type ServicesFlags } from "./services";
import { createTerminal, type Terminal } from "./terminal";
import { importOpenApiCommand, type ImportOpenApiFlags } from "./tools";
import { TASK_STATUSES } from "@market/core/status";

export const ExitStatus = { ok: 0, failed: 1, usage: 2, notAllPosted: 3 } as const;

const ENVIRONMENT_HELP = `
Environment:
  MARKET_API_KEY      API key (sk_...) of the wallet (market keys create makes one)
  MARKET_PRIVATE_KEY  private key of that same wallet; signs escrow transactions and sign-ins, never leaves this machine
  MARKET_API_URL      API base URL (default http://127.0.0.1:3000)
  MARKET_RPC_ARC      JSON-RPC URL of the arc chain (there is no default RPC)
  MARKET_ESCROW_ARC   escrow address the client trusts on arc
  MARKET_MCP_STATE_DIR  where \`market mcp\` keeps each idempotencyKey's run (default ~/.market/mcp)

--json on any command: its answer as JSON on stdout (bigints as strings); the report and notes go to stderr.

Exit status: 0 done, 1 refused or failed (also a run whose remaining rows can never be posted), 2 bad arguments,
3 NOT_ALL_POSTED (rows a rerun can still post: rerun the same command).`;

function positiveInteger(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError("must be a whole number of at least 1");
  return Number(value);
}

function nonNegativeInteger(value: string): number {
  if (!/^[0-9]{1,6}$/.test(value)) throw new InvalidArgumentError("must be a whole number of seconds");
  return Number(value);
}

function score(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) > 100) throw new InvalidArgumentError("must be a whole number from 0 to 100");
  return Number(value);
}

function usdc(value: string): bigint {
  const parsed = parseUsdcDecimal(value.trim());
  if (!parsed.ok) throw new InvalidArgumentError(parsed.message);
  return parsed.value;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, "../../../package.json"), "utf8")) as { name?: string; version?: string };
    if (pkg.name === "@market/cli" && pkg.version) return pkg.version;
  } catch {
    // run from source
  }
  return "0.0.0-dev";
}

/** The command as typed, to tell the user what to rerun. */
function commandLine(argv: readonly string[]): string {
  const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);
  return ["market", ...argv.map(quote)].join(" ");
}

/** What a program embedding the command passes in; the `market` binary passes nothing. */
export interface CliDeps {
  postTasks?: PostTasksHooks;
}

export function buildProgram(terminal: Terminal, argv: readonly string[], setExit: (status: number) => void, deps: CliDeps = {}): Command {
  const program = new Command("market")
    .description("Post tasks to the marketplace in bulk, follow them, rent services, judge results, settle, manage API keys.")
    .version(version())
    .option("--api-url <url>", "API base URL (overrides MARKET_API_URL)")
    .option("--rpc-url <url>", "arc JSON-RPC URL (overrides MARKET_RPC_ARC)")
    .option("--escrow <address>", "escrow address trusted on arc (overrides MARKET_ESCROW_ARC)")
    .option("--json", "print the command's answer as JSON on stdout (the report goes to stderr)")
    .addHelpText("after", ENVIRONMENT_HELP)
    .showHelpAfterError("(market --help for usage)")
    .exitOverride();

  const config = (): CliConfig => readConfig(process.env, program.opts<GlobalFlags>());

  program
    .command("post-tasks")
    .description("Check a CSV or JSON Lines task file, show the totals, ask once, post every row; rerun the same command to finish a stopped run.")
    .requiredOption("--file <path>", "task file (.csv, .jsonl or .ndjson)")
    .option("--dry-run", "check the file and show the totals; send nothing")
    .option("--results <path>", "results file (default <file>.results.csv); the journal is <results>.journal.jsonl")
    .option("--chunk <n>", "tasks per funding transaction when the escrow has batch creation (default 20)", positiveInteger)
    .option("--yes", "do not ask (required without a terminal)")
    .option("--allow-repost", "pay again for rows this wallet already paid for from a task file (a copy); asked on a terminal, refused otherwise")
    .option("--max-total <usdc>", "refuse, before paying anything, a run whose escrow total is above this (USDC)", usdc)
    .option("--chain <name>", "chain of the rows without a chain column (arc, 0g...; default the service's first postable chain)")
    .action(async (options: Omit<PostTasksFlags, "maxTotalRaw"> & { maxTotal?: bigint }) => {
      const { maxTotal, ...rest } = options;
      const flags: PostTasksFlags = { ...rest, ...(maxTotal !== undefined ? { maxTotalRaw: maxTotal } : {}) };
      setExit(await postTasksCommand(flags, config(), terminal, commandLine(argv), deps.postTasks));
    });

  program
    .command("finish-posts")
    .description("List the rows an earlier post-tasks run paid for but did not list, without paying again; posts nothing new.")
    .requiredOption("--file <path>", "the task file of that run")
    .option("--results <path>", "its results file, if --results was given to post-tasks")
    .option("--chain <name>", "the --chain given to post-tasks, if any")
    .action(async (flags: FinishPostsFlags) => {
      const post = commandLine([
        "post-tasks",
        "--file",
        flags.file,
        ...(flags.results ? ["--results", flags.results] : []),
        ...(flags.chain ? ["--chain", flags.chain] : []),
      ]);
      setExit(await finishPostsCommand(flags, config(), terminal, post));
    });

  program
    .command("review")
    .description("Show a task's delivered result; with --approve or --reject, your verdict on it as the poster (manual task).")
    .argument("<taskHash>", "the task (0x and 64 hex characters)")
    .option("--approve", "the result passes: the worker is paid")
    .option("--reject", "the result fails: the worker may appeal or deliver again")
    .option("--reason <text>", "a reason (repeat for several)", collect)
    .option("--score <0-100>", "score (default 100 for approve, 0 for reject)", score)
    .action(async (taskHash: string, flags: ReviewFlags) => {
      setExit(await reviewCommand(taskHash, flags, config(), terminal));
    });

  program
    .command("cancel")
    .description("Get the escrow back: cancel an open task, or claim after its deadline (the poster's).")
    .argument("<taskHash>", "the task (0x and 64 hex characters)")
    .action(async (taskHash: string) => {
      setExit(await cancelCommand(taskHash, config(), terminal));
    });

  program
    .command("services")
    .description("List the active services of hosted agents: fixed-price calls to rent with `market rent`.")
    .option("--agent <address>", "only this agent's services")
    .option("--limit <n>", "at most this many (default 100)", positiveInteger)
    .action(async (flags: ServicesFlags) => {
      setExit(await servicesCommand(flags, config(), terminal));
    });

  program
    .command("rent")
    .description("Rent a service: pay its price into escrow for one call, pinned to its agent, and wait for the result.")
    .argument("<serviceId>", "the service (from `market services`)")
    .option("--prompt <text>", "what you ask of the service")
    .option("--prompt-file <path>", "read the prompt from a file instead")
    .option("--public", "send the prompt in the clear (default: encrypted to the service's agent)")
    .option("--wait <seconds>", "how long to wait for the result (default 45)", nonNegativeInteger, 45)
    .option("--yes", "do not ask (required without a terminal)")
    .action(async (serviceId: string, flags: RentFlags) => {
      setExit(await rentCommand(serviceId, flags, config(), terminal));
    });

  program
    .command("dispute")
    .description("Raise a dispute on a task: the poster before its deadline, the worker before it or within 3 days of a failed verdict.")
    .argument("<taskHash>", "the task (0x and 64 hex characters)")
    .action(async (taskHash: string) => {
      setExit(await actionCommand("dispute", taskHash, config(), terminal));
    });

  program
    .command("release")
    .description("Hand back a task you hold and have not delivered for (the worker's): it opens again for other agents.")
    .argument("<taskHash>", "the task (0x and 64 hex characters)")
    .action(async (taskHash: string) => {
      setExit(await actionCommand("release", taskHash, config(), terminal));
    });

  program
    .command("tasks")
    .description("List the tasks you posted (newest first), or with --assigned the tasks you work on, with status, reward and deadline.")
    .option("--assigned", "the tasks your wallet works on as worker (not ended), with the rounds each has left")
    .option("--status <status>", `only tasks with this status (repeat, or separate with commas): ${TASK_STATUSES.join(", ")}`, collect)
    .option("--limit <n>", "at most this many tasks (default 100)", positiveInteger)
    .action(async (flags: TasksFlags) => {
      setExit(await tasksCommand(flags, config(), terminal));
    });

  program
    .command("status")
    .description("Show one task: status, reward, parties, rounds, deadline and verdict (the output with market review).")
    .argument("<taskHash>", "the task (0x and 64 hex characters)")
    .option("--wait <seconds>", "first wait up to this long for the task to be judged or to end, woken by its events", nonNegativeInteger)
    .action(async (taskHash: string, flags: { wait?: number }) => {
      setExit(await statusCommand(taskHash, config(), terminal, flags));
    });

  const skills = program
    .command("skills")
    .description("The skills registry: list, create, import a SKILL.md, install into or remove from your hosted agent.");
  skills
    .command("list")
    .description("Public skills, most installed first.")
    .option("--tag <tag>", "only skills with this capability tag")
    .option("--search <text>", "text in the slug, name or description")
    .option("--limit <n>", "at most this many (default 50)", positiveInteger)
    .action(async (flags: SkillsListFlags) => {
      setExit(await skillsListCommand(flags, config(), terminal));
    });
  skills
    .command("create")
    .description("Create a skill from a JSON file of its fields (slug, name, instructions, tools, secretRefs, capabilities, isPublic).")
    .argument("<file>", "the JSON file")
    .action(async (file: string) => {
      setExit(await skillsCreateCommand(file, config(), terminal));
    });
  skills
    .command("import")
    .description("Create a skill from a SKILL.md file: frontmatter name, description, version, license; the body is the instructions.")
    .argument("<file>", "the SKILL.md file (bundled files are never read)")
    .option("--slug <slug>", "the skill's slug (default: from its name)")
    .option("--public", "list it in the registry (default private)")
    .option("--tag <tag...>", "capability tags it adds to agents")
    .action(async (file: string, flags: SkillsImportFlags) => {
      setExit(await skillsImportCommand(file, flags, config(), terminal));
    });
  skills
    .command("install")
    .description("Install a skill into your hosted agent (a frozen snapshot, joined at its next start).")
    .argument("<slug>", "the skill")
    .requiredOption("--agent <id>", "the hosted agent's id", positiveInteger)
    .action(async (slug: string, flags: { agent: number }) => {
      setExit(await skillsInstallCommand(slug, flags.agent, config(), terminal));
    });
  skills
    .command("remove")
    .description("Remove an installed skill from your hosted agent (at its next start).")
    .argument("<slug>", "the skill")
    .requiredOption("--agent <id>", "the hosted agent's id", positiveInteger)
    .action(async (slug: string, flags: { agent: number }) => {
      setExit(await skillsRemoveCommand(slug, flags.agent, config(), terminal));
    });

  program
    .command("tools")
    .description("Tools for hosted agents and skills.")
    .command("import-openapi")
    .description("Draft HTTP tools from an OpenAPI 3.x JSON document (nothing stored or run): review, make each url full, confirm.")
    .argument("<source>", "the document: a file, or an http(s) URL")
    .option("--out <file>", "write the drafts' tool definitions to this JSON file")
    .action(async (source: string, flags: ImportOpenApiFlags) => {
      setExit(await importOpenApiCommand(source, flags, config(), terminal));
    });

  const keys = program.command("keys").description("Your account's API keys, signing in with MARKET_PRIVATE_KEY (no API key needed).");
  keys
    .command("create")
    .description("Create an API key acting as your wallet; it is printed once.")
    .option("--name <name>", 'a name to tell keys apart (default "market cli")')
    .action(async (flags: { name?: string }) => {
      setExit(await keysCreateCommand(flags, config(), terminal));
    });
  keys
    .command("list")
    .description("List the account's API keys (never the keys themselves).")
    .action(async () => {
      setExit(await keysListCommand(config(), terminal));
    });
  keys
    .command("revoke")
    .description("Revoke one API key of the account by its id (market keys list shows it).")
    .argument("<id>", "the key's id", positiveInteger)
    .action(async (id: number) => {
      setExit(await keysRevokeCommand(id, config(), terminal));
    });

  program
    .command("mcp")
    .description(
      "Serve the marketplace's MCP tools on stdio (post_tasks, rent_service, poll_task_result, cancel_task, claim_timeout, browse_services, get_service, bid_on_task) for an MCP client.",
    )
    .option("--state-dir <path>", "where each idempotencyKey's run is journaled (overrides MARKET_MCP_STATE_DIR; default ~/.market/mcp)")
    .option("--print-config", "print the MCP client config (mcpServers JSON, absolute paths) that starts this market mcp from any folder, and exit")
    .option("--include-keys", "with --print-config: put MARKET_API_KEY and MARKET_PRIVATE_KEY in it (placeholders otherwise)")
    .action(async (flags: McpFlags & { printConfig?: boolean; includeKeys?: boolean }) => {
      if (flags.printConfig) {
        const printed = mcpClientConfig(
          { ...process.env, ...(flags.stateDir ? { MARKET_MCP_STATE_DIR: path.resolve(flags.stateDir) } : {}) },
          {
            includeKeys: flags.includeKeys === true,
          },
        );
        // Straight to stdout: with --include-keys the keys are what was asked for (the terminal would mask them).
        process.stdout.write(`${JSON.stringify(printed, null, 2)}\n`);
        return;
      }
      setExit(await mcpCommand(flags, config(), terminal, deps.postTasks));
    });

  return program;
}

/**
 * What to do after the refusals a new user meets when a local stack was restarted (`npm start` resets every chain and
 * database and prints new keys): said after the error itself.
 */
const RECOVERY_HINTS: Record<string, string> = {
  INVALID_TOKEN:
    "The API does not know this key. A local stack's `npm start` resets all state and prints new keys at every start: export the MARKET_API_KEY it printed last. Elsewhere, `market keys create` makes a key with MARKET_PRIVATE_KEY.",
  JOURNAL_MISMATCH:
    "A local stack's `npm start` resets its chains at every start, so a journal and results file from an earlier start name fundings that are gone: move them away (or pass another --results path) and post afresh.",
};

/** Prints an error as `error CODE: message` (with each row of a bulk refusal) and returns the exit status. */
export function reportError(terminal: Terminal, error: unknown): number {
  if (error instanceof ApiError) {
    terminal.data({ error: error.body });
    terminal.note(`error ${error.code}: ${error.message}`);
    for (const e of error.body.errors ?? []) {
      terminal.note(`  line ${e.line ?? e.index + 1}${e.column ? `, column ${e.column}` : ""}: ${e.code}: ${e.message}`);
    }
    for (const d of error.body.details ?? []) {
      const where = d.field ?? d.taskHash ?? d.index;
      terminal.note(`  ${where !== undefined ? `${String(where)}: ` : ""}${d.code ? `${String(d.code)}: ` : ""}${String(d.message ?? "")}`);
    }
    const hint = RECOVERY_HINTS[error.code];
    if (hint) terminal.note(`  ${hint}`);
    return error.code === "VALIDATION_FAILED" ? ExitStatus.usage : ExitStatus.failed;
  }
  terminal.data({ error: { code: "INTERNAL_ERROR", message: (error as Error)?.message ?? String(error) } });
  terminal.note(`error INTERNAL_ERROR: ${(error as Error)?.message ?? String(error)}`);
  if (process.env.MARKET_DEBUG) terminal.note(String((error as Error)?.stack));
  return ExitStatus.failed;
}

export async function main(argv: readonly string[], deps: CliDeps = {}): Promise<number> {
  const secrets = secretsOf({ apiKey: process.env.MARKET_API_KEY?.trim(), privateKey: process.env.MARKET_PRIVATE_KEY?.trim() });
  // Known before parsing, so an error in the arguments is answered as JSON too.
  const json = argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length).includes("--json");
  const terminal = createTerminal((text) => redact(text, secrets), { json });
  let status: number = ExitStatus.ok;
  const program = buildProgram(terminal, argv, (s) => (status = s), deps);
  try {
    await program.parseAsync([...argv], { from: "user" });
    return status;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? ExitStatus.ok : ExitStatus.usage;
    }
    return reportError(terminal, error);
  }
}

/** Runs the command as this process and exits with its status. */
export function runAndExit(argv: readonly string[], deps: CliDeps = {}): void {
  void main(argv, deps).then((status) => {
    // Exit once the output is flushed; open RPC and HTTP sockets must not keep a finished command alive.
    process.stdout.write("", () => process.stderr.write("", () => process.exit(status)));
  });
}

if (require.main === module) runAndExit(process.argv.slice(2));
