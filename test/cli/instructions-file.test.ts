/**
 * `instructions_file` confined to the task file's folder (docs/security.md, issue 14 item 2): absolute paths, `../`
 * and symlinks that lead out are refused with INSTRUCTIONS_FILE_OUTSIDE; files inside (through symlinks too) are read.
 */
import { expect } from "chai";
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { confinedPath, loadTaskFile } from "../../cli/src/task-file";

describe("cli: instructions_file stays inside the task file's folder", function () {
  let root: string;
  let folder: string;
  beforeEach(function () {
    root = mkdtempSync(path.join(tmpdir(), "market-confine-"));
    folder = path.join(root, "tasks");
    mkdirSync(path.join(folder, "briefs"), { recursive: true });
    writeFileSync(path.join(root, "secret.txt"), "PRIVATE KEY MATERIAL");
    writeFileSync(path.join(folder, "briefs", "a.txt"), "Summarise the attached minutes.");
    symlinkSync(path.join(root, "secret.txt"), path.join(folder, "briefs", "leak.txt"));
    symlinkSync(path.join(root), path.join(folder, "up"));
    symlinkSync(path.join(folder, "briefs", "a.txt"), path.join(folder, "alias.txt"));
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });

  const outside = (relative: string) => {
    try {
      confinedPath(folder, relative);
    } catch (error) {
      return (error as { rowCode?: string }).rowCode;
    }
    return "read";
  };

  it("refuses absolute paths, ../ and symlinks out; reads files inside, through symlinks too", function () {
    expect(outside(path.join(root, "secret.txt"))).to.equal("INSTRUCTIONS_FILE_OUTSIDE");
    expect(outside("../secret.txt")).to.equal("INSTRUCTIONS_FILE_OUTSIDE");
    expect(outside("briefs/../../secret.txt")).to.equal("INSTRUCTIONS_FILE_OUTSIDE");
    expect(outside("briefs/leak.txt")).to.equal("INSTRUCTIONS_FILE_OUTSIDE");
    expect(outside("up/secret.txt")).to.equal("INSTRUCTIONS_FILE_OUTSIDE");
    expect(outside(".")).to.equal("INSTRUCTIONS_FILE_OUTSIDE");
    expect(outside("briefs/a.txt")).to.equal("read");
    expect(outside("alias.txt")).to.equal("read");
  });

  it("a task file whose row names a symlink out is refused whole, with the row's error; the secret is never in the rows", function () {
    const file = path.join(folder, "t.csv");
    writeFileSync(file, "instructions_file,reward\nbriefs/a.txt,1\nbriefs/leak.txt,1\n");
    let caught: { code?: string; body?: { errors?: Array<{ line: number; code: string }> } } | undefined;
    try {
      loadTaskFile(file);
    } catch (error) {
      caught = error as typeof caught;
    }
    expect(caught?.code).to.equal("INVALID_ROWS");
    expect(caught?.body?.errors).to.have.length(1);
    expect(caught?.body?.errors?.[0]).to.deep.include({ line: 3, column: "instructions_file", code: "INSTRUCTIONS_FILE_OUTSIDE" });
    writeFileSync(file, "instructions_file,reward\nbriefs/a.txt,1\n");
    expect(loadTaskFile(file).map((r) => r.input.instructions)).to.deep.equal(["Summarise the attached minutes."]);
  });
});
