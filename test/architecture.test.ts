import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { serverImportProblems } from "../scripts/lib/import-graph";

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
});
