/**
 * SKILL.md files (spec "Skill"): flat frontmatter between `---` lines (`name` required; `description`, `version`
 * default `1.0.0`, `license` optional; other keys ignored, their indented continuation lines too) and a Markdown body
 * that becomes the instructions. Bundled files are never read: only this text. Pure: the server, the SDK and the CLI
 * share it.
 */

export interface SkillFile {
  name: string;
  description: string;
  version: string;
  license: string | null;
  instructions: string;
}

/** Why a file is refused: `code` is the API's error code. */
export class SkillFileError extends Error {
  constructor(
    readonly code: "SKILL_FILE_MALFORMED" | "SKILL_NAME_MISSING",
    message: string,
  ) {
    super(message);
  }
}

const KNOWN = new Set(["name", "description", "version", "license"]);

function scalar(raw: string, line: number): string {
  const value = raw.trim();
  if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) {
    const inner = value.slice(1, -1);
    if (value.startsWith('"')) {
      try {
        return JSON.parse(value) as string;
      } catch {
        throw new SkillFileError("SKILL_FILE_MALFORMED", `line ${line}: the quoted value is not a valid string`);
      }
    }
    return inner.replace(/''/g, "'");
  }
  if (/^[[{|>]/.test(value)) throw new SkillFileError("SKILL_FILE_MALFORMED", `line ${line}: only flat values are read (no lists, maps or blocks)`);
  return value.replace(/\s+#.*$/, "");
}

/** Parses a SKILL.md file's text; `SkillFileError` names what is wrong. */
export function parseSkillFile(text: string): SkillFile {
  const lines = text
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .split("\n");
  if (lines[0]?.trim() !== "---") throw new SkillFileError("SKILL_FILE_MALFORMED", "the file does not start with a --- frontmatter line");
  const end = lines.findIndex((l, i) => i > 0 && l.trim() === "---");
  if (end < 0) throw new SkillFileError("SKILL_FILE_MALFORMED", "the frontmatter has no closing --- line");
  const fields = new Map<string, string>();
  let ignoring = false;
  for (let i = 1; i < end; i++) {
    const line = lines[i]!;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    if (/^\s/.test(line)) {
      // An indented line continues the key above: allowed only under a key we ignore.
      if (ignoring) continue;
      throw new SkillFileError("SKILL_FILE_MALFORMED", `line ${i + 1}: an indented line under a flat key`);
    }
    const match = /^([A-Za-z0-9_-]+)\s*:(.*)$/.exec(line);
    if (!match) throw new SkillFileError("SKILL_FILE_MALFORMED", `line ${i + 1}: not a "key: value" line`);
    const key = match[1]!;
    if (!KNOWN.has(key)) {
      ignoring = true;
      continue;
    }
    ignoring = false;
    if (fields.has(key)) throw new SkillFileError("SKILL_FILE_MALFORMED", `line ${i + 1}: ${key} is given twice`);
    fields.set(key, scalar(match[2]!, i + 1));
  }
  const name = fields.get("name")?.trim() ?? "";
  if (!name) throw new SkillFileError("SKILL_NAME_MISSING", "the frontmatter has no name");
  const instructions = lines
    .slice(end + 1)
    .join("\n")
    .trim();
  if (!instructions) throw new SkillFileError("SKILL_FILE_MALFORMED", "the body (the skill's instructions) is empty");
  return {
    name,
    description: fields.get("description")?.trim() ?? "",
    version: fields.get("version")?.trim() || "1.0.0",
    license: fields.get("license")?.trim() || null,
    instructions,
  };
}

/** A slug from a skill's name: lowercase letters and digits, other runs as one hyphen, at most 64. */
export function slugOf(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64)
    .replace(/-+$/, "");
}
