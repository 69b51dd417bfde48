import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { serverImportProblems } from "../scripts/lib/import-graph";
import { layerProblems } from "../scripts/lib/layers";
import { ensureCliBuilt } from "./support/cli";

const ROOT = path.resolve(__dirname, "..");

describe("architecture", function () {
  it("server/ is a DAG: no import cycle between files or folders (type-only imports count), and no module imports app.ts", function () {
    expect(serverImportProblems(path.resolve(__dirname, "..", "server"))).to.deep.equal([]);
  });

  describe("the import check itself", function () {
    let dir: string;
    const write = (file: string, text: string) => {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    };
    beforeEach(function () {
      dir = mkdtempSync(path.join(tmpdir(), "market-imports-"));
      write("app.ts", 'import { one } from "./tasks";\nexport const app = one;\n');
      write("index.ts", 'export { app } from "./app";\n');
      write("tasks/index.ts", "export const one = 1;\n");
    });
    afterEach(function () {
      rmSync(dir, { recursive: true, force: true });
    });

    it("finds nothing in a DAG", function () {
      expect(serverImportProblems(dir)).to.deep.equal([]);
    });

    it("finds a cycle made of type-only imports, between files and between their folders", function () {
      write("tasks/view.ts", 'import type { Deps } from "../market/deps";\nexport type View = Deps;\n');
      write("market/deps.ts", 'import { type View } from "../tasks/view";\nexport type Deps = { view?: View };\n');
      expect(serverImportProblems(dir)).to.deep.equal([
        "file cycle (2 files), e.g. market/deps.ts -> tasks/view.ts -> market/deps.ts",
        "folder cycle (market, tasks), e.g. market (market/deps.ts) -> tasks (tasks/view.ts) -> market",
      ]);
    });

    it("finds a module importing the composition root, and a cycle through re-exports and require()", function () {
      write("tasks/routes.ts", 'import type { App } from "../app";\nexport type Routes = App;\n');
      write("http/a.ts", 'export * from "./b";\n');
      write("http/b.ts", 'const a = require("./a");\nexport const b = a;\n');
      expect(serverImportProblems(dir)).to.deep.equal([
        "tasks/routes.ts imports app.ts (the composition root)",
        "file cycle (2 files), e.g. http/a.ts -> http/b.ts -> http/a.ts",
        "folder cycle (app.ts, tasks), e.g. app.ts (app.ts) -> tasks (tasks/routes.ts) -> app.ts",
      ]);
    });
  });

  it("the repository keeps its layers: core <- sdk <- cli, core <- sdk <- web, core <- server through the SDK's entry files, no cycle anywhere, no I/O in core, every package declared", function () {
    expect(layerProblems(path.resolve(__dirname, ".."))).to.deep.equal([]);
  });

  it("@market/core is core's sources under ts-node (the tests, the server, the scripts) and its build, core/dist, under plain Node", function () {
    this.timeout(300_000);
    expect(require.resolve("@market/core/escrow")).to.equal(path.join(ROOT, "core/escrow/index.ts"));
    expect(require.resolve("@market/core/errors")).to.equal(path.join(ROOT, "core/errors.ts"));
    ensureCliBuilt();
    const resolve = (name: string) =>
      execFileSync(process.execPath, ["-p", `require.resolve(${JSON.stringify(name)})`], { cwd: ROOT, encoding: "utf8" }).trim();
    expect(resolve("@market/core/escrow")).to.equal(path.join(ROOT, "core/dist/core/escrow/index.js"));
    expect(resolve("@market/core/verification/criteria")).to.equal(path.join(ROOT, "core/dist/core/verification/criteria.js"));
  });

  describe("the layering check itself", function () {
    let dir: string;
    const write = (file: string, text: string) => {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    };
    beforeEach(function () {
      dir = mkdtempSync(path.join(tmpdir(), "market-layers-"));
      write("package.json", JSON.stringify({ name: "market", dependencies: { ethers: "6" } }));
      write(
        "core/package.json",
        JSON.stringify({
          name: "@market/core",
          exports: { "./*": { types: "./dist/core/*.d.ts", default: "./dist/core/*.js" } },
          dependencies: { ethers: "6" },
        }),
      );
      write("sdk/package.json", JSON.stringify({ name: "@market/sdk", dependencies: { "@market/core": "0", ethers: "6" } }));
      write("cli/package.json", JSON.stringify({ name: "@market/cli", dependencies: { "@market/core": "0", ethers: "6" } }));
      write("core/money.ts", "export const unit = 1n;\n");
      write("sdk/src/index.ts", 'export { unit } from "@market/core/money";\nexport { client } from "./client";\n');
      write("sdk/src/client.ts", "export const client = 1;\n");
      write("cli/src/main.ts", 'import { client } from "../../sdk/src/client";\nexport const main = client;\n');
      write(
        "server/app.ts",
        'import { client } from "../sdk/src";\nimport { unit } from "@market/core/money";\nexport const app = [client, unit];\n',
      );
    });
    afterEach(function () {
      rmSync(dir, { recursive: true, force: true });
    });

    it("finds nothing in a repository that keeps them", function () {
      expect(layerProblems(dir)).to.deep.equal([]);
    });

    it("finds an import up the layers, the server past the SDK's entry files, I/O in core, and a file cycle across folders", function () {
      write(
        "core/money.ts",
        'import { readFileSync } from "node:fs";\nimport { client } from "../sdk/src/client";\nexport const unit = [readFileSync, client];\n',
      );
      write("sdk/src/client.ts", 'import { main } from "../../cli/src/main";\nexport const client = main;\n');
      write("server/app.ts", 'import { client } from "../sdk/src/client";\nexport const app = client;\n');
      write("web/src/bulk.tsx", 'import { main } from "../../cli/src/main";\nexport const page = main;\n');
      expect(layerProblems(dir)).to.deep.equal([
        "core/money.ts imports node:fs: core/ does no I/O",
        "core/money.ts imports sdk/src/client.ts: core may not import sdk",
        "sdk/src/client.ts imports cli/src/main.ts: sdk may not import cli",
        "server/app.ts imports sdk/src/client.ts: the server imports the SDK through its entry files only (sdk/src/index.ts, sdk/src/mcp/index.ts, sdk/src/posting/journal/index.ts, sdk/src/node/index.ts)",
        "web/src/bulk.tsx imports cli/src/main.ts: web may not import cli",
        "file cycle (2 files), e.g. cli/src/main.ts -> sdk/src/client.ts -> cli/src/main.ts",
      ]);
    });

    it("finds core imported by path outside core/, core importing itself by name, a missing or unexported module, and I/O globals in core", function () {
      write("core/limits.ts", 'import { unit } from "@market/core/money";\nexport const max = [unit, process.env.MAX];\n');
      write("core/fetcher.ts", "export const get = (url: string) => fetch(url);\nexport const label = { process: 1 }.process;\n");
      write("server/app.ts", 'import { unit } from "../core/money";\nimport { gone } from "@market/core/gone";\nexport const app = [unit, gone];\n');
      write("test/money.test.ts", 'import { unit } from "../core/money";\nexport const t = unit;\n');
      write("core/tasks/index.ts", "export const draft = 1;\n");
      write("web/src/draft.ts", 'import { draft } from "@market/core/tasks";\nexport const d = draft;\n');
      expect(layerProblems(dir)).to.deep.equal([
        "core/fetcher.ts uses fetch: core/ does no I/O",
        "core/limits.ts uses process: core/ does no I/O",
        "core/limits.ts imports @market/core/money: core's own files import each other by relative path",
        "server/app.ts imports core/money.ts by path: outside core/, import it as @market/core/money (scripts/codemod-core-imports.ts rewrites these)",
        "server/app.ts imports @market/core/gone, which is no module of core/",
        'web/src/draft.ts imports @market/core/tasks, which core/package.json "exports" does not map to core/tasks/index.ts (a folder needs its own entry)',
        "test/money.test.ts imports core/money.ts by path: outside core/, import it as @market/core/money (scripts/codemod-core-imports.ts rewrites these)",
      ]);
    });

    it("finds a package the folder's own package does not declare", function () {
      write("server/app.ts", 'import { Wallet } from "ethers";\nimport { Command } from "commander";\nexport const app = [Wallet, Command];\n');
      write("package.json", JSON.stringify({ name: "market", dependencies: {} }));
      write("cli/src/main.ts", 'import { Command } from "commander";\nexport const main = Command;\n');
      write("core/money.ts", 'import { Type } from "@sinclair/typebox";\nexport const unit = Type.String();\n');
      write("sdk/package.json", JSON.stringify({ name: "@market/sdk", dependencies: { ethers: "6" } }));
      expect(layerProblems(dir)).to.deep.equal([
        "core/money.ts imports @sinclair/typebox, which core/package.json does not declare",
        "sdk/src/index.ts imports @market/core, which sdk/package.json does not declare",
        "cli/src/main.ts imports commander, which cli/package.json does not declare",
        "server/app.ts imports ethers, which the root package.json does not declare",
        "server/app.ts imports commander, which the root package.json does not declare",
      ]);
    });
  });
});
