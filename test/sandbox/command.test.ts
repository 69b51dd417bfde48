/** The pure rules of sandbox tools (core/sandbox.ts): `{input}` substitution and the refusal inside skills. */
import { expect } from "chai";
import { refuseSandboxToolsInSkill, substituteInput } from "@market/core/sandbox";
import { MarketError } from "@market/core/errors";

describe("sandbox tools: the command's {input} and skills", function () {
  it("replaces each {input} by a reference to $1 that the shell expands as one word", function () {
    expect(substituteInput("wc -c {input}")).to.deep.equal({ script: 'wc -c "$1"' });
    expect(substituteInput('echo "a {input} b" {input}')).to.deep.equal({ script: 'echo "a $1 b" "$1"' });
    expect(substituteInput("echo \\{input} '\"' {input}")).to.deep.equal({ script: 'echo \\{input} \'"\' "$1"' });
    expect(substituteInput("echo '{input}'")).to.deep.equal({ error: "has {input} inside single quotes, where the shell would not expand it" });
    expect(substituteInput('echo "{input}')).to.deep.equal({ error: 'has an unclosed " quote' });
  });

  it("refuses JS Eval and Sandbox tools inside a skill with SANDBOX_TOOL_IN_SKILL, naming the tool", function () {
    expect(() => refuseSandboxToolsInSkill([{ type: "http" }, {}], "body.tools")).to.not.throw();
    for (const type of ["js_eval", "sandbox"]) {
      let error: unknown;
      try {
        refuseSandboxToolsInSkill([{ type: "http" }, { type }], "body.tools");
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(MarketError);
      expect((error as MarketError).code).to.equal("SANDBOX_TOOL_IN_SKILL");
      expect((error as MarketError).details?.[0]?.field).to.equal("body.tools.1.type");
    }
  });
});
