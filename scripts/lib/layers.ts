import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import ts from "typescript";
import { cycles, shortestCycle } from "./import-graph";

/**
 * The layers of the repository and what each may import (`npm run check:imports`, test/architecture.test.ts):
 *
 *   core    shared rules, no I/O: imports nothing of ours but the generated bindings (typechain-types)
 *   sdk     @market/sdk (sdk/src): core and the bindings
 *   cli     the `market` command (cli/src): sdk, core and the bindings
 *   server  the API and the indexer: core, the bindings, deploy/deployments.ts (the deployment record it reads), and the
 *           SDK only through its entry files (SERVER_SDK_ENTRIES)
 *   web     the web app (web/src, bundled by Vite): core and the SDK, never the CLI or the server
 *
 * scripts/, bench/, deploy/, examples/ and test/ sit above them and may import any of them; nothing in a layer imports
 * them (but the server's one deployment record). Over all of it: no import cycle between files (type-only imports
 * count). core imports no module that does I/O and uses no global that does (`process`, `fetch`...).
 *
 * core is the package @market/core (core/package.json, built into core/dist): every folder but core itself imports it
 * by that name (`@market/core/escrow`), never by a relative path into core/, and core's own files import each other by
 * relative path. Each folder's packages are declared by the package that owns it: core by core/package.json; sdk/src
 * by sdk/package.json; cli/src, and the SDK it compiles in, by cli/package.json (@market/cli, built by its own
 * cli/tsconfig.json); everything else by the root package.json (whose workspaces, @market/*, need no declaration).
 */
export const LAYERS = ["core", "sdk", "cli", "server", "web"] as const;
export type Layer = (typeof LAYERS)[number];

const LAYER_FOLDERS: Record<Layer, string> = { core: "core", sdk: "sdk/src", cli: "cli/src", server: "server", web: "web/src" };
const MAY_IMPORT: Record<Layer, readonly Layer[]> = {
  core: [],
  sdk: ["core"],
  cli: ["sdk", "core"],
  server: ["core", "sdk"],
  web: ["core", "sdk"],
};
/** The upper folders: they may import any layer, and no layer imports them. */
const UPPER_FOLDERS = ["scripts", "bench", "deploy", "examples", "test"];
/** Files of the upper folders a layer may still import (the server reads the deployment record). */
const SHARED_FILES: Partial<Record<Layer, readonly string[]>> = { server: ["deploy/deployments.ts"] };
const BINDINGS = "typechain-types";

/** The SDK's entry files the server may import: the package, the MCP tools, the journaled engine, its Node helpers. */
export const SERVER_SDK_ENTRIES = ["sdk/src/index.ts", "sdk/src/mcp/index.ts", "sdk/src/posting/journal/index.ts", "sdk/src/node/index.ts"];

/** The package core is, as the other folders import it. */
export const CORE_PACKAGE = "@market/core";

/** The layers the other workspaces are, imported by name. */
const WORKSPACE_LAYERS: Record<string, Layer> = { "@market/sdk": "sdk", "@market/cli": "cli" };

/** Modules that do I/O, which core/ never imports. */
const IO_MODULES = new Set([
  "fs",
  "fs/promises",
  "net",
  "http",
  "https",
  "http2",
  "child_process",
  "dgram",
  "dns",
  "tls",
  "readline",
  "worker_threads",
  "cluster",
  "os",
]);

/** Globals that do I/O or reach the process, which core/ never uses. */
const IO_GLOBALS = new Set(["process", "fetch", "XMLHttpRequest", "WebSocket", "EventSource", "navigator", "localStorage"]);

/**
 * Packages a folder uses without declaring them, each with the reason: Hardhat's toolbox brings its plugins' helpers
 * to the tests and benchmarks it runs (installing the toolbox installs them; a test imports them as Hardhat documents).
 */
const PROVIDED: Record<string, string> = {
  chai: "@nomicfoundation/hardhat-toolbox",
  "@nomicfoundation/hardhat-network-helpers": "@nomicfoundation/hardhat-toolbox",
  "@nomicfoundation/hardhat-ethers": "@nomicfoundation/hardhat-toolbox",
  "@openzeppelin/upgrades-core": "@openzeppelin/hardhat-upgrades",
};

interface Source {
  file: string;
  /** Repository-relative path with forward slashes. */
  name: string;
  folder: string;
  layer?: Layer;
}

function tsFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names) {
    const full = path.join(dir, name);
    if (name === "node_modules" || name === "dist") continue;
    if (statSync(full).isDirectory()) out.push(...tsFiles(full));
    else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

/**
 * The module names a file imports: `import` and `export ... from` (type-only ones too), `import x = require()`,
 * `require()` and `import()` with a literal name. Read from the syntax tree, so a method named `require` is not one.
 */
export function moduleSpecifiers(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expression = node.moduleReference.expression;
      if (ts.isStringLiteral(expression)) found.push(expression.text);
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0]!)) {
      const callee = node.expression;
      if ((ts.isIdentifier(callee) && callee.text === "require") || callee.kind === ts.SyntaxKind.ImportKeyword) found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The I/O globals `text` uses (an identifier read as a value, not a property name or a declaration of its own). */
export function ioGlobals(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && IO_GLOBALS.has(node.text)) {
      const parent = node.parent;
      const isName =
        (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        ((ts.isPropertyAssignment(parent) || ts.isPropertySignature(parent) || ts.isPropertyDeclaration(parent) || ts.isMethodDeclaration(parent)) &&
          parent.name === node) ||
        (ts.isVariableDeclaration(parent) && parent.name === node) ||
        (ts.isParameter(parent) && parent.name === node) ||
        ts.isBindingElement(parent) ||
        ts.isImportSpecifier(parent) ||
        ts.isTypeReferenceNode(parent) ||
        ts.isQualifiedName(parent);
      if (!isName) found.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found].sort();
}

/**
 * The source file core/package.json's "exports" sends `@market/core<subpath>` to once built (`./dist/core/x.js` is
 * core/x.ts), or undefined when no entry matches: what a packed @market/core offers.
 */
export function exportedCoreSource(exportsMap: Record<string, unknown>, subpath: string): string | undefined {
  const key = `.${subpath}`;
  const targetOf = (entry: unknown) => (typeof entry === "string" ? entry : ((entry as { default?: string } | undefined)?.default ?? undefined));
  let target = key in exportsMap ? targetOf(exportsMap[key]) : undefined;
  if (target === undefined)
    for (const [pattern, entry] of Object.entries(exportsMap)) {
      const star = pattern.indexOf("*");
      if (star < 0) continue;
      const [prefix, suffix] = [pattern.slice(0, star), pattern.slice(star + 1)];
      if (key.length > prefix.length + suffix.length && key.startsWith(prefix) && key.endsWith(suffix)) {
        target = targetOf(entry)?.replace("*", key.slice(prefix.length, key.length - suffix.length));
        break;
      }
    }
  return target?.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts");
}

function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

function declared(packageJson: string): Set<string> {
  const pkg = JSON.parse(readFileSync(packageJson, "utf8")) as Record<string, Record<string, string> | undefined>;
  return new Set([
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.devDependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
    String(pkg.name),
  ]);
}

/** The problems of the repository at `rootDir` against the rules above (none when it keeps them). */
export function layerProblems(rootDir: string): string[] {
  const root = path.resolve(rootDir);
  const rel = (file: string) => path.relative(root, file).split(path.sep).join("/");
  const sources: Source[] = [];
  for (const layer of LAYERS)
    for (const file of tsFiles(path.join(root, LAYER_FOLDERS[layer]))) sources.push({ file, name: rel(file), folder: LAYER_FOLDERS[layer], layer });
  for (const folder of UPPER_FOLDERS) for (const file of tsFiles(path.join(root, folder))) sources.push({ file, name: rel(file), folder });
  const byFile = new Map(sources.map((s) => [s.file, s]));
  const layerOf = (name: string): Layer | undefined => LAYERS.find((l) => name === LAYER_FOLDERS[l] || name.startsWith(`${LAYER_FOLDERS[l]}/`));

  const rootPackages = declared(path.join(root, "package.json"));
  const corePackages = declared(path.join(root, "core/package.json"));
  const sdkPackages = declared(path.join(root, "sdk/package.json"));
  const cliPackages = declared(path.join(root, "cli/package.json"));
  const workspaces = new Set([CORE_PACKAGE, "@market/sdk", "@market/cli"]);
  const coreExports = (JSON.parse(readFileSync(path.join(root, "core/package.json"), "utf8")) as { exports?: Record<string, unknown> }).exports ?? {};
  const options: ts.CompilerOptions = { moduleResolution: ts.ModuleResolutionKind.Node10, allowJs: false };

  const problems: string[] = [];
  const imports = new Map<string, Set<string>>();
  for (const source of sources) {
    const targets = new Set<string>();
    imports.set(source.file, targets);
    const text = readFileSync(source.file, "utf8");
    if (source.layer === "core") for (const name of ioGlobals(source.file, text)) problems.push(`${source.name} uses ${name}: core/ does no I/O`);
    for (const fileName of moduleSpecifiers(source.file, text)) {
      const corePath = fileName === CORE_PACKAGE || fileName.startsWith(`${CORE_PACKAGE}/`) ? fileName.slice(CORE_PACKAGE.length) : undefined;
      if (corePath !== undefined) {
        if (source.layer === "core") problems.push(`${source.name} imports ${fileName}: core's own files import each other by relative path`);
        if (source.layer === "sdk" && !sdkPackages.has(CORE_PACKAGE))
          problems.push(`${source.name} imports ${CORE_PACKAGE}, which sdk/package.json does not declare`);
        if ((source.layer === "sdk" || source.layer === "cli") && !cliPackages.has(CORE_PACKAGE))
          problems.push(`${source.name} imports ${CORE_PACKAGE}, which cli/package.json does not declare`);
      }
      if (fileName.startsWith(".") || corePath !== undefined) {
        const request = corePath === undefined ? fileName : path.join(root, "core", corePath);
        const resolved = ts.resolveModuleName(request, source.file, options, ts.sys).resolvedModule?.resolvedFileName;
        const target = resolved ? path.resolve(resolved) : path.resolve(path.dirname(source.file), request);
        const targetName = rel(target);
        if (corePath !== undefined && !resolved) problems.push(`${source.name} imports ${fileName}, which is no module of core/`);
        else if (corePath !== undefined && source.layer !== "core") {
          const exported = exportedCoreSource(coreExports, corePath);
          if (exported === undefined || path.join(root, exported) !== target)
            problems.push(
              `${source.name} imports ${fileName}, which core/package.json "exports" does not map to ${targetName} (a folder needs its own entry)`,
            );
        }
        if (byFile.has(target)) targets.add(target);
        if (corePath === undefined && source.layer !== "core" && layerOf(targetName) === "core") {
          const subpath = targetName
            .replace(/^core\//, "")
            .replace(/\.tsx?$/, "")
            .replace(/(^|\/)index$/, "");
          problems.push(
            `${source.name} imports ${targetName} by path: outside core/, import it as ${CORE_PACKAGE}/${subpath} (scripts/codemod-core-imports.ts rewrites these)`,
          );
        }
        if (!source.layer) continue;
        if (targetName.startsWith(`${BINDINGS}/`)) continue;
        const targetLayer = layerOf(targetName);
        if (targetLayer === source.layer) continue;
        if (targetLayer === undefined) {
          if (!(SHARED_FILES[source.layer] ?? []).includes(targetName))
            problems.push(
              `${source.name} imports ${targetName}, outside the layers (${source.layer} may import ${MAY_IMPORT[source.layer].join(", ") || "nothing of ours"})`,
            );
        } else if (!MAY_IMPORT[source.layer].includes(targetLayer)) {
          problems.push(`${source.name} imports ${targetName}: ${source.layer} may not import ${targetLayer}`);
        } else if (source.layer === "server" && targetLayer === "sdk" && !SERVER_SDK_ENTRIES.includes(targetName)) {
          problems.push(
            `${source.name} imports ${targetName}: the server imports the SDK through its entry files only (${SERVER_SDK_ENTRIES.join(", ")})`,
          );
        }
        continue;
      }
      const bare = fileName.replace(/^node:/, "");
      const pkg = packageOf(bare);
      if (fileName.startsWith("node:") || builtinModules.includes(pkg)) {
        if (source.layer === "core" && IO_MODULES.has(bare)) problems.push(`${source.name} imports ${fileName}: core/ does no I/O`);
        continue;
      }
      const workspaceLayer = WORKSPACE_LAYERS[pkg];
      if (source.layer && workspaceLayer && workspaceLayer !== source.layer && !MAY_IMPORT[source.layer].includes(workspaceLayer))
        problems.push(`${source.name} imports ${pkg}: ${source.layer} may not import ${workspaceLayer}`);
      if (workspaces.has(pkg) || PROVIDED[pkg]) continue;
      if (source.layer === "cli" && !cliPackages.has(pkg)) problems.push(`${source.name} imports ${pkg}, which cli/package.json does not declare`);
      if (source.layer === "sdk" && !sdkPackages.has(pkg)) problems.push(`${source.name} imports ${pkg}, which sdk/package.json does not declare`);
      if (source.layer === "sdk" && !cliPackages.has(pkg))
        problems.push(`${source.name} imports ${pkg}, which cli/package.json must declare too (the CLI compiles the SDK in)`);
      if (source.layer === "core" && !corePackages.has(pkg)) problems.push(`${source.name} imports ${pkg}, which core/package.json does not declare`);
      if ((source.layer === "server" || source.layer === "web" || !source.layer) && !rootPackages.has(pkg))
        problems.push(`${source.name} imports ${pkg}, which the root package.json does not declare`);
    }
  }

  const files = sources.map((s) => s.file);
  const edges = (file: string) => imports.get(file)!;
  for (const component of cycles(files, edges).map((c) => [...c].sort())) {
    const cycle = shortestCycle(component, edges);
    problems.push(`file cycle (${component.length} files), e.g. ${[...cycle, cycle[0]!].map(rel).join(" -> ")}`);
  }
  return [...new Set(problems)];
}
