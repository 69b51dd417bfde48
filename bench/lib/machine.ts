/**
 * What a bench figure was measured on, so figures from two machines can be compared: the load average, the core count
 * and two calibration loops timed on this machine (a fixed SHA-256 loop for the CPU, a fixed SQLite insert loop for
 * CPU + memory + the SQLite engine). A figure divided by its machine's calibration (`perCalibration`) is what travels:
 * the same bench on a machine half as fast gives about the same normalised figure.
 */
import { createHash } from "node:crypto";
import { cpus, loadavg } from "node:os";
import SQLite from "better-sqlite3";

export interface Calibration {
  /** Milliseconds for 200,000 chained SHA-256 hashes of 64 bytes (best of three). */
  sha256LoopMs: number;
  /** Milliseconds for 50,000 single-row inserts in one transaction into an in-memory SQLite table (best of three). */
  sqliteInsertLoopMs: number;
}

export interface MachineFigures {
  loadAverage1m: number;
  cpus: number;
  calibration: Calibration;
}

const HASH_ROUNDS = 200_000;
const INSERT_ROWS = 50_000;

function bestOf(runs: number, run: () => number): number {
  let best = Infinity;
  for (let i = 0; i < runs; i += 1) best = Math.min(best, run());
  return Math.round(best * 100) / 100;
}

function timeHashLoop(): number {
  const start = process.hrtime.bigint();
  let digest = Buffer.alloc(64, 7);
  for (let i = 0; i < HASH_ROUNDS; i += 1) digest = Buffer.concat([createHash("sha256").update(digest).digest(), digest.subarray(0, 32)]);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function timeInsertLoop(): number {
  const db = new SQLite(":memory:");
  try {
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, hash TEXT NOT NULL, amount TEXT NOT NULL)");
    const insert = db.prepare("INSERT INTO t (id, hash, amount) VALUES (?, ?, ?)");
    const start = process.hrtime.bigint();
    db.transaction(() => {
      for (let i = 0; i < INSERT_ROWS; i += 1) insert.run(i, `0x${i.toString(16).padStart(64, "0")}`, String(i * 1_000_000));
    })();
    return Number(process.hrtime.bigint() - start) / 1e6;
  } finally {
    db.close();
  }
}

/** Times the calibration loops (about a second in all) and reads the load average. Call it before the measured work. */
export function machineFigures(): MachineFigures {
  return {
    loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
    cpus: cpus().length,
    calibration: { sha256LoopMs: bestOf(3, timeHashLoop), sqliteInsertLoopMs: bestOf(3, timeInsertLoop) },
  };
}

/**
 * A throughput (per second) or a duration expressed in units of this machine's hash loop: throughput × loop time for
 * rates, duration ÷ loop time for durations. Either way a faster machine and a slower one give about the same number.
 */
export function perCalibration(value: number, kind: "rate" | "duration", calibration: Calibration): number {
  const normalised = kind === "rate" ? (value * calibration.sha256LoopMs) / 1000 : value / calibration.sha256LoopMs;
  return Math.round(normalised * 1000) / 1000;
}

/**
 * A bench's main figures divided by the machine's calibration (`perCalibration` each), keyed as given, and a line
 * printing them beside the calibration: what a bench JSON carries as `perCalibration`, next to `machine`.
 */
export function calibrated(figures: Record<string, { value: number; kind: "rate" | "duration" }>, machine: MachineFigures): Record<string, number> {
  const normalised = Object.fromEntries(
    Object.entries(figures).map(([name, { value, kind }]) => [name, perCalibration(value, kind, machine.calibration)]),
  );
  console.log(
    `per calibration (SHA-256 loop ${machine.calibration.sha256LoopMs} ms, SQLite loop ${machine.calibration.sqliteInsertLoopMs} ms, ` +
      `load ${machine.loadAverage1m} on ${machine.cpus} CPUs; rates x loop s, durations / loop ms):`,
    normalised,
  );
  return normalised;
}
