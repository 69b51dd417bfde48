/**
 * Where a bench's time goes: a V8 CPU profile of one stretch of this thread (node:inspector), its samples summed by
 * category. A sample in native code (SQLite's statements, JSON.parse...) counts for its category when its name says
 * which (`native`), else for the nearest JavaScript caller's file.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber?: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Categories {
  /** Native functions by name (e.g. better-sqlite3's `run`): category. */
  native?: Record<string, string>;
  /** Ordered: the first pattern matching the file (URL) of a sample's function, or of its nearest caller with one. */
  files: Array<[RegExp, string]>;
}

/**
 * Runs `work` under the CPU profiler; returns its result, the milliseconds per category and the functions that took
 * the most self time (`top`, milliseconds by "function file:line"); `file` gets the profile.
 */
export async function profiled<T>(
  work: () => Promise<T>,
  categories: Categories,
  file?: string,
): Promise<{ result: T; ms: Record<string, number>; top: Record<string, number> }> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 500 });
  await session.post("Profiler.start");
  const stop = async () => {
    const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: CpuProfile };
    session.disconnect();
    if (file) writeFileSync(file, JSON.stringify(profile));
    return { ms: categorize(profile, categories), top: topSelf(profile, TOP) };
  };
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await stop();
    throw error;
  }
  const { ms, top } = await stop();
  return { result, ms, top };
}

/** Functions listed in `top`. */
const TOP = 12;

/** The `count` functions with the most self time (samples in the function itself), in milliseconds. */
function topSelf(profile: CpuProfile, count: number): Record<string, number> {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const ms = new Map<string, number>();
  for (const [i, id] of profile.samples.entries()) {
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    const where = url ? ` ${url.replace(/^.*\/(node_modules\/)?/, "")}:${(lineNumber ?? 0) + 1}` : "";
    const key = `${functionName || "(anonymous)"}${where}`;
    ms.set(key, (ms.get(key) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000);
  }
  return Object.fromEntries(
    [...ms.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([k, v]) => [k, Math.round(v)]),
  );
}

function categorize(profile: CpuProfile, categories: Categories): Record<string, number> {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const categoryOf = new Map<number, string>();
  const category = (id: number): string => {
    const known = categoryOf.get(id);
    if (known) return known;
    const { functionName, url } = nodes.get(id)!.callFrame;
    let found: string;
    if (functionName === "(idle)") found = "idle";
    else if (functionName === "(garbage collector)") found = "gc";
    else if (!url && categories.native?.[functionName]) found = categories.native[functionName]!;
    else if (url) found = categories.files.find(([pattern]) => pattern.test(url))?.[1] ?? "other";
    else found = parent.has(id) ? category(parent.get(id)!) : "other";
    categoryOf.set(id, found);
    return found;
  };
  const ms: Record<string, number> = {};
  for (const [i, id] of profile.samples.entries()) {
    const key = category(id);
    ms[key] = (ms[key] ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000;
  }
  return Object.fromEntries(
    Object.entries(ms)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, Math.round(v)]),
  );
}
