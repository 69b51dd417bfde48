/**
 * Rewrites every import of core/ by relative path outside core/ into an import of the @market/core package (issue 24):
 * `from "../../core/escrow"` becomes `from "@market/core/escrow"`, `../core/api/index` becomes `@market/core/api`.
 *
 *   npx ts-node --transpile-only scripts/codemod-core-imports.ts [--check]
 *
 * Every form a module name takes is rewritten, read from the syntax tree: `import` and `export ... from` (type-only
 * ones too), `import x = require()`, `require()`, `import()` and `import("...")` types. core/'s own files keep their
 * relative imports (inside the package). The files are the repository's TypeScript and JavaScript (`git ls-files`,
 * tracked and untracked but not ignored); each file it changes is then formatted by Prettier (the repository's
 * .prettierrc.json), so an import that now fits on one line or no longer does is laid out as `npm run lint` wants.
 * Deterministic and idempotent: a second run changes nothing. It stops, changing nothing, when an import names a core
 * path that is not a module of the package (core/ itself, a missing file). `--check` lists what it would change and
 * exits 1 when there is anything.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import * as prettier from "prettier";
import ts from "typescript";

const ROOT = path.resolve(__dirname, "..");
const CORE = path.join(ROOT, "core");
const PACKAGE = "@market/core";
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Folders whose files are not ours to rewrite (generated, built, or core itself). */
const SKIPPED = ["core/", "node_modules/", "typechain-types/", "artifacts/", "cache/"];

function files(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  return [...new Set(listed.split("\0"))]
    .filter((name) => SOURCE.test(name) && !name.endsWith(".d.ts"))
    .filter((name) => !SKIPPED.some((folder) => name.startsWith(folder)) && !name.split("/").includes("dist"))
    .filter((name) => existsSync(path.join(ROOT, name)))
    .sort();
}

function scriptKind(name: string): ts.ScriptKind {
  if (name.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (/\.[mc]?js$/.test(name)) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

/** The string literals that name a module in `source`, whatever the form. */
function moduleNames(source: ts.SourceFile): ts.StringLiteralLike[] {
  const found: ts.StringLiteralLike[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      if (ts.isStringLiteral(node.moduleReference.expression)) found.push(node.moduleReference.expression);
    } else if (ts.isCallExpression(node) && node.arguments.length >= 1 && ts.isStringLiteralLike(node.arguments[0]!)) {
      const callee = node.expression;
      const isRequire = ts.isIdentifier(callee) && callee.text === "require";
      const isRequireResolve =
        ts.isPropertyAccessExpression(callee) &&
        ts.isIdentifier(callee.expression) &&
        callee.expression.text === "require" &&
        callee.name.text === "resolve";
      if (isRequire || isRequireResolve || callee.kind === ts.SyntaxKind.ImportKeyword) found.push(node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The package name for a relative module name that points into core/, or undefined when it points elsewhere. */
function packageName(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const target = path.resolve(path.dirname(path.join(ROOT, file)), specifier);
  if (target !== CORE && !target.startsWith(CORE + path.sep)) return undefined;
  let subpath = path.relative(CORE, target).split(path.sep).join("/");
  subpath = subpath.replace(/\.(ts|js)$/, "").replace(/(^|\/)index$/, "");
  const module = path.join(CORE, subpath);
  const isModule = existsSync(`${module}.ts`) || (existsSync(module) && statSync(module).isDirectory() && existsSync(path.join(module, "index.ts")));
  if (subpath === "" || !isModule) throw new Error(`${file} imports "${specifier}", which is no module of ${PACKAGE} (core/${subpath})`);
  return `${PACKAGE}/${subpath}`;
}

async function main() {
  const check = process.argv.includes("--check");
  const changes: { file: string; text: string; count: number }[] = [];
  for (const file of files()) {
    const text = readFileSync(path.join(ROOT, file), "utf8");
    if (!text.includes("core")) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
    const edits = moduleNames(source)
      .map((literal) => ({ literal, name: packageName(file, literal.text) }))
      .filter((edit): edit is { literal: ts.StringLiteralLike; name: string } => edit.name !== undefined);
    if (edits.length === 0) continue;
    let out = text;
    // From the end, so earlier positions stay valid; the quotes are kept (start + 1 .. end - 1 is the text).
    for (const { literal, name } of edits.sort((a, b) => b.literal.getStart() - a.literal.getStart()))
      out = out.slice(0, literal.getStart(source) + 1) + name + out.slice(literal.getEnd() - 1);
    changes.push({ file, text: out, count: edits.length });
  }
  const total = changes.reduce((sum, change) => sum + change.count, 0);
  if (check) {
    for (const change of changes) console.log(`${change.file}: ${change.count}`);
    console.log(`${total} import(s) of core/ by relative path in ${changes.length} file(s)`);
    process.exit(changes.length === 0 ? 0 : 1);
  }
  for (const change of changes) {
    const full = path.join(ROOT, change.file);
    const options = (await prettier.resolveConfig(full)) ?? {};
    writeFileSync(full, await prettier.format(change.text, { ...options, filepath: full }));
  }
  console.log(`rewrote ${total} import(s) of core/ in ${changes.length} file(s) to ${PACKAGE} (and formatted those files with Prettier)`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
