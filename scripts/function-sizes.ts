/**
 * `npx ts-node --transpile-only scripts/function-sizes.ts [N] [folders...]`: the N largest functions (declarations,
 * methods, arrow functions and function expressions; default 26) of the repository's own TypeScript, by lines, and
 * how many are over 150 lines. What the architecture issues measure ("closure factories the size of a file").
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const ROOT = path.resolve(__dirname, "..");
const FOLDERS = ["core", "server", "sdk/src", "cli/src", "scripts", "bench", "deploy"];

export interface FunctionSize {
  file: string;
  name: string;
  line: number;
  lines: number;
}

function filesUnder(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return entry === "node_modules" || entry === "dist" ? [] : filesUnder(full);
    return /\.tsx?$/.test(entry) && !entry.endsWith(".d.ts") ? [full] : [];
  });
}

function nameOf(node: ts.Node): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) return node.name.getText();
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "(anonymous)";
}

/** Every function of the files under `folders` (relative to the repository), largest first. */
export function functionSizes(folders: readonly string[] = FOLDERS): FunctionSize[] {
  const sizes: FunctionSize[] = [];
  for (const file of folders.flatMap((f) => filesUnder(path.join(ROOT, f)))) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node) => {
      if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
        const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        sizes.push({ file: path.relative(ROOT, file), name: nameOf(node), line: start + 1, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return sizes.sort((a, b) => b.lines - a.lines);
}

if (require.main === module) {
  const [first, ...rest] = process.argv.slice(2);
  const count = first && /^\d+$/.test(first) ? Number(first) : 26;
  const folders = first && /^\d+$/.test(first) ? rest : process.argv.slice(2);
  const sizes = functionSizes(folders.length > 0 ? folders : FOLDERS);
  for (const s of sizes.slice(0, count)) console.log(`${String(s.lines).padStart(5)}  ${s.name}  ${s.file}:${s.line}`);
  console.log(`${sizes.filter((s) => s.lines > 150).length} function(s) over 150 lines`);
}
