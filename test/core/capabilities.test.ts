import { expect } from "chai";
import { AgentCap, CAPABILITY_TAGS, checkCapabilities, isCapabilityTag, parseCapabilityList } from "../../core/capabilities";

describe("core/capabilities", () => {
  it("has the spec's 20 tags, each once", () => {
    expect(CAPABILITY_TAGS).to.have.length(20);
    expect(new Set(CAPABILITY_TAGS).size).to.equal(20);
    expect(CAPABILITY_TAGS).to.include.members(["data_processing", "competitive_analysis", "email_drafting", "testing"]);
  });

  it("AgentCap maps each upper-case name to its tag", () => {
    expect(AgentCap.WEB_RESEARCH).to.equal("web_research");
    expect(AgentCap.COMPETITIVE_ANALYSIS).to.equal("competitive_analysis");
    expect(Object.keys(AgentCap)).to.have.length(20);
    for (const [name, tag] of Object.entries(AgentCap)) expect(name).to.equal(tag.toUpperCase());
    expect(Object.isFrozen(AgentCap)).to.equal(true);
  });

  const isTagTable: [unknown, boolean][] = [
    ["translation", true],
    ["market_research", true],
    ["Translation", false],
    [" translation", false],
    ["oracle", false],
    ["", false],
    [undefined, false],
    [42, false],
  ];
  for (const [value, expected] of isTagTable) {
    it(`isCapabilityTag(${JSON.stringify(value)}) is ${expected}`, () => {
      expect(isCapabilityTag(value)).to.equal(expected);
    });
  }

  const parseTable: { text: string; allowComma?: boolean; tags: string[]; unknown: string[] }[] = [
    { text: "", tags: [], unknown: [] },
    { text: "web_research", tags: ["web_research"], unknown: [] },
    { text: " web_research ; Summarization;", tags: ["web_research", "summarization"], unknown: [] },
    { text: "translation;translation;TRANSLATION", tags: ["translation"], unknown: [] },
    { text: "translation,testing", tags: [], unknown: ["translation,testing"] },
    { text: "translation,testing", allowComma: true, tags: ["translation", "testing"], unknown: [] },
    { text: "translation; testing, scheduling", allowComma: true, tags: ["translation", "testing", "scheduling"], unknown: [] },
    { text: "translation;cooking;;oracle ", tags: ["translation"], unknown: ["cooking", "oracle"] },
  ];
  for (const { text, allowComma, tags, unknown } of parseTable) {
    it(`parseCapabilityList(${JSON.stringify(text)}${allowComma ? ", comma" : ""})`, () => {
      expect(parseCapabilityList(text, { allowComma })).to.deep.equal({ tags, unknown });
    });
  }

  it("checkCapabilities reads an array with the same rules", () => {
    expect(checkCapabilities(["Testing", "testing", "x", " "])).to.deep.equal({ tags: ["testing"], unknown: ["x"] });
  });
});
