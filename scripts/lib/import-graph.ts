import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/**
 * The import graph of a source folder, read with the TypeScript compiler's own pre-processor and module resolution:
 * every `import` (type-only ones too), `export ... from`, `require()` and `import()`. Only edges between files of the
 * folder are kept.
 */
export interface ImportGraph {
  /** Absolute paths of the folder's .ts files. */
  files: string[];
  /** File to the files of the folder it imports. */
  imports: Map<string, Set<string>>;
}

export function importGraph(folder: string, compilerOptions: ts.CompilerOptions = { moduleResolution: ts.ModuleResolutionKind.Node10 }): ImportGraph {
  const root = path.resolve(folder);
  const files = tsFiles(root);
  const inFolder = new Set(files);
  const imports = new Map<string, Set<string>>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
      const resolved = ts.resolveModuleName(fileName, file, compilerOptions, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved && inFolder.has(path.resolve(resolved))) targets.add(path.resolve(resolved));
    }
    imports.set(file, targets);
  }
  return { files, imports };
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...tsFiles(full));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

/** Strongly connected components with more than one node (or a node importing itself): the import cycles. */
export function cycles<T extends NonNullable<unknown>>(nodes: readonly T[], edges: (node: T) => Iterable<T>): T[][] {
  // Tarjan's algorithm, iterative so deep graphs cannot overflow the stack.
  const index = new Map<T, number>();
  const low = new Map<T, number>();
  const onStack = new Set<T>();
  const stack: T[] = [];
  const found: T[][] = [];
  let next = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: Array<{ node: T; pending: Iterator<T> }> = [];
    const visit = (node: T) => {
      index.set(node, next);
      low.set(node, next);
      next += 1;
      stack.push(node);
      onStack.add(node);
      work.push({ node, pending: edges(node)[Symbol.iterator]() });
    };
    visit(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const step = frame.pending.next();
      if (!step.done) {
        const target = step.value;
        if (!index.has(target)) visit(target);
        else if (onStack.has(target)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: T[] = [];
      for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
        onStack.delete(member);
        component.push(member);
        if (member === frame.node) break;
      }
      const selfLoop = component.length === 1 && [...edges(frame.node)].includes(frame.node);
      if (component.length > 1 || selfLoop) found.push(component.reverse());
    }
  }
  return found;
}

/** The shortest cycle through a component's first node, as the nodes in import order (the first one not repeated). */
export function shortestCycle<T extends NonNullable<unknown>>(component: readonly T[], edges: (node: T) => Iterable<T>): T[] {
  const start = component[0]!;
  const members = new Set(component);
  const cameFrom = new Map<T, T>();
  const queue: T[] = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const target of edges(node)) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [node];
        for (let back = cameFrom.get(node); back !== undefined; back = cameFrom.get(back)) path.push(back);
        return path.reverse();
      }
      if (!cameFrom.has(target) && target !== start) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start];
}

/**
 * The rules server/ keeps, as problems found (none when it keeps them):
 * - no import cycle between files, type-only imports included;
 * - no import cycle between its folders (each top-level folder is one node, each top-level file its own);
 * - no file imports the composition root `app.ts`, except `index.ts`, the other composition root, which runs it.
 */
export function serverImportProblems(serverDir: string): string[] {
  const root = path.resolve(serverDir);
  const { files, imports } = importGraph(root);
  const name = (file: string) => path.relative(root, file).split(path.sep).join("/");
  const problems: string[] = [];

  const appFile = path.join(root, "app.ts");
  const compositionRoots = new Set([appFile, path.join(root, "index.ts")]);
  for (const file of files) {
    if (!compositionRoots.has(file) && imports.get(file)!.has(appFile)) problems.push(`${name(file)} imports app.ts (the composition root)`);
  }

  const fileEdges = (file: string) => imports.get(file)!;
  for (const component of cycles(files, fileEdges).map((c) => [...c].sort())) {
    const cycle = shortestCycle(component, fileEdges);
    problems.push(`file cycle (${component.length} files), e.g. ${[...cycle, cycle[0]!].map(name).join(" -> ")}`);
  }

  const folderOf = (file: string) => name(file).split("/")[0]!;
  const folders = [...new Set(files.map(folderOf))];
  const folderImports = new Map<string, Set<string>>(folders.map((f) => [f, new Set<string>()]));
  for (const file of files) {
    for (const target of imports.get(file)!) {
      if (folderOf(target) !== folderOf(file)) folderImports.get(folderOf(file))!.add(folderOf(target));
    }
  }
  const folderEdges = (folder: string) => folderImports.get(folder)!;
  for (const component of cycles(folders, folderEdges).map((c) => [...c].sort())) {
    const cycle = shortestCycle(component, folderEdges);
    const through = cycle.map((folder, i) => {
      const to = cycle[(i + 1) % cycle.length]!;
      const example = files.find((f) => folderOf(f) === folder && [...imports.get(f)!].some((t) => folderOf(t) === to));
      return `${folder} (${example ? name(example) : "?"})`;
    });
    problems.push(`folder cycle (${component.join(", ")}), e.g. ${through.join(" -> ")} -> ${cycle[0]}`);
  }
  return problems;
}
