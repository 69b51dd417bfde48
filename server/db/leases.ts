import { hostname } from "node:os";
import type { Client } from "pg";

/**
 * Leader election for the work exactly one API process may do at a time (docs/scaling.md): each chain's indexer, each
 * verifier key's sender, the hosted-agent runners. On PostgreSQL a lease is a session-level advisory lock taken on a
 * connection of its own: a process that dies (even by SIGKILL) closes it and the lock is free at once, and every other
 * process tries the leases it lacks every `retryMs`, so another takes over within about that long. On SQLite one
 * process serves the database (startServer refuses a second one), and it holds every lease from the start.
 */
export interface Leases {
  /** Competes for `name`; runs `role` (acquired, later lost) while this process holds it. Each name once. */
  hold(name: string, role: LeaseRole): void;
  /** Whether this process holds `name` now. */
  held(name: string): boolean;
  /** The names this process holds now, sorted. */
  names(): string[];
  /** Stops competing for `name`: its role stops (`lost`) if it was held, and the lease is free for another process. */
  release(name: string): Promise<void>;
  /** Stops every role it holds (`lost`), releases the leases and closes the lock connection. */
  close(): Promise<void>;
}

export interface LeaseRole {
  /** The lease is held: start the work. A throw gives the lease up (another process may take it). */
  acquired(): Promise<void> | void;
  /** The lease is gone (its connection failed) or given up (close): stop the work; resolve once it has stopped. */
  lost(): Promise<void> | void;
}

export interface LeasesOptions {
  /** PostgreSQL connection string; absent on SQLite (every lease is held by this, the only process). */
  databaseUrl?: string;
  /** How often a lease not held is tried again and the lock connection checked (ms). Default 1,000. */
  retryMs?: number;
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** The first key of every advisory lock the service takes ("MKT1"); the second is hashtext(name). */
export const LEASE_LOCK_NAMESPACE = 0x4d4b5431;

/** Name of the lease of a chain's indexer. */
export const indexerLease = (chain: string) => `indexer:${chain}`;
/** Name of the lease of the sender of a key's transactions on a chain (server/outbox). */
export const senderLease = (chain: string, sender: string) => `sender:${chain}:${sender.toLowerCase()}`;
/** Name of the lease of the hosted-agent runners. */
export const HOSTED_RUNNERS_LEASE = "hosted-runners";

interface Lease {
  role: LeaseRole;
  held: boolean;
  /** Transitions of one lease happen one after another. */
  turn: Promise<void>;
}

export function createLeases(options: LeasesOptions): Leases {
  return options.databaseUrl ? postgresLeases(options.databaseUrl, options) : soleProcessLeases(options);
}

/** SQLite: this process is the only one; every lease is held from the start until close. */
function soleProcessLeases(options: LeasesOptions): Leases {
  const leases = new Map<string, Lease>();
  let closed = false;
  /** Once its start has run, a held lease's role stops. */
  async function stop(name: string, lease: Lease): Promise<void> {
    await lease.turn;
    if (!lease.held) return;
    lease.held = false;
    await Promise.resolve(lease.role.lost()).catch((error: unknown) =>
      options.logger?.warn({ lease: name, err: error }, "lease: stopping the role failed"),
    );
  }
  return {
    hold(name, role) {
      if (leases.has(name)) throw new Error(`lease ${name} is already held`);
      const lease: Lease = { role, held: true, turn: Promise.resolve() };
      leases.set(name, lease);
      lease.turn = Promise.resolve()
        .then(() => (closed ? undefined : role.acquired()))
        .catch((error: unknown) => options.logger?.warn({ lease: name, err: error }, "lease: starting the role failed"));
    },
    held: (name) => leases.get(name)?.held === true,
    names: () => [...leases.keys()].filter((name) => leases.get(name)!.held).sort(),
    async release(name) {
      const lease = leases.get(name);
      if (!lease) return;
      leases.delete(name);
      await stop(name, lease);
    },
    async close() {
      closed = true;
      for (const [name, lease] of leases) await stop(name, lease);
    },
  };
}

function postgresLeases(connectionString: string, options: LeasesOptions): Leases {
  // Loaded only when PostgreSQL is configured.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pg = require("pg") as typeof import("pg");
  const retryMs = options.retryMs ?? 1_000;
  const log = options.logger;
  const leases = new Map<string, Lease>();
  let client: Client | undefined;
  let broken = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  let again = false;

  function transition(name: string, lease: Lease, work: () => Promise<void>): Promise<void> {
    lease.turn = lease.turn.then(work).catch((error: unknown) => log?.warn({ lease: name, err: error }, "lease: a role transition failed"));
    return lease.turn;
  }

  async function connect(): Promise<Client> {
    const c = new pg.Client({
      connectionString,
      application_name: `market ${hostname()}:${process.pid}`.slice(0, 63),
      keepAlive: true,
      query_timeout: Math.max(5_000, retryMs * 5),
    });
    // Only the connection in use counts: one being closed on purpose (drop, close) is not news.
    c.on("error", (error) => {
      if (client !== c) return;
      broken = true;
      log?.warn({ err: error }, "lease: the lock connection failed");
      wake();
    });
    c.on("end", () => {
      if (client !== c) return;
      broken = true;
      wake();
    });
    try {
      await c.connect();
      // The server notices a peer that vanished (a host that lost power) within about 25 s, and frees its locks.
      await c.query("set tcp_keepalives_idle = 10; set tcp_keepalives_interval = 5; set tcp_keepalives_count = 3");
    } catch (error) {
      await c.end().catch(() => undefined);
      throw error;
    }
    broken = false;
    return c;
  }

  /** Every held lease is lost (its connection is gone, or the process closes): each role stops. */
  async function loseAll(reason: string, closing = false): Promise<void> {
    const lost: Promise<void>[] = [];
    for (const [name, lease] of leases) {
      if (!lease.held) continue;
      lease.held = false;
      if (closing) log?.info({ lease: name }, "lease: released");
      else log?.warn({ lease: name, reason }, "lease: lost");
      lost.push(transition(name, lease, async () => lease.role.lost()));
    }
    await Promise.all(lost);
  }

  /** The lock connection is gone: every role stops now; this process competes again from the next round. */
  async function drop(reason: string): Promise<void> {
    const old = client;
    client = undefined;
    broken = false;
    await loseAll(reason);
    await old?.end().catch(() => undefined);
  }

  async function tick(): Promise<void> {
    // A holder whose connection failed sits out one round, so the processes that were waiting take the work over.
    if (client && broken) return drop("the lock connection failed");
    if (closed) return;
    if (!client) {
      try {
        client = await connect();
      } catch (error) {
        log?.warn({ err: error }, "lease: cannot reach the database; retrying");
        return;
      }
    }
    try {
      for (const [name, lease] of leases) {
        if (lease.held || closed) continue;
        const { rows } = await client.query<{ ok: boolean }>("select pg_try_advisory_lock($1, hashtext($2)) as ok", [LEASE_LOCK_NAMESPACE, name]);
        if (!rows[0]?.ok) continue;
        lease.held = true;
        log?.info({ lease: name }, "lease: acquired");
        const holder = client;
        await transition(name, lease, async () => {
          try {
            await lease.role.acquired();
          } catch (error) {
            // Given up, so that another process may take it; this one tries again later.
            lease.held = false;
            log?.warn({ lease: name, err: error }, "lease: the role did not start; lease released");
            await Promise.resolve(lease.role.lost()).catch(() => undefined);
            await holder.query("select pg_advisory_unlock($1, hashtext($2))", [LEASE_LOCK_NAMESPACE, name]).catch(() => undefined);
          }
        });
      }
      // A held lease is only as good as its connection: check it every round.
      if ([...leases.values()].some((l) => l.held)) await client.query("select 1");
    } catch (error) {
      log?.warn({ err: error }, "lease: the lock connection failed");
      await drop("the lock connection failed");
    }
  }

  function schedule(delay: number) {
    if (closed || ticking) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      ticking = tick().finally(() => {
        ticking = undefined;
        const soon = again;
        again = false;
        schedule(soon ? 0 : retryMs);
      });
    }, delay);
  }

  /** Runs a round now (or right after the running one). */
  function wake() {
    if (ticking) again = true;
    else schedule(0);
  }

  return {
    hold(name, role) {
      if (leases.has(name)) throw new Error(`lease ${name} is already held`);
      leases.set(name, { role, held: false, turn: Promise.resolve() });
      wake();
    },
    held: (name) => leases.get(name)?.held === true,
    names: () => [...leases.keys()].filter((name) => leases.get(name)!.held).sort(),
    async release(name) {
      const lease = leases.get(name);
      if (!lease) return;
      leases.delete(name);
      await ticking;
      const wasHeld = lease.held;
      lease.held = false;
      if (wasHeld) {
        log?.info({ lease: name }, "lease: released");
        await transition(name, lease, async () => lease.role.lost());
        await client?.query("select pg_advisory_unlock($1, hashtext($2))", [LEASE_LOCK_NAMESPACE, name]).catch(() => undefined);
      }
      await lease.turn;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await ticking;
      await loseAll("closing", true);
      for (const lease of leases.values()) await lease.turn;
      const c = client;
      client = undefined;
      if (c) {
        await c.query("select pg_advisory_unlock_all()").catch(() => undefined);
        await c.end().catch(() => undefined);
      }
    },
  };
}
