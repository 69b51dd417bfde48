import { expect } from "chai";
import { AgentCap, CAPABILITY_TAGS, checkCapabilities, isCapabilityTag, isWellFormedTag, parseCapabilityList } from "@market/core/capabilities";

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

  // The API, SDK and CLI accept any well-formed tag; the 20 known ones are the web app's list and the badges'.
  const wellFormedTable: [unknown, boolean][] = [
    ["translation", true],
    ["legal_review", true],
    ["x", true],
    ["rust-2024", true],
    ["a".repeat(64), true],
    ["a".repeat(65), false],
    ["Translation", false],
    ["9lives", false],
    ["_private", false],
    ["two words", false],
    ["translation,testing", false],
    ["émigré", false],
    ["", false],
    [42, false],
  ];
  for (const [value, expected] of wellFormedTable) {
    it(`isWellFormedTag(${JSON.stringify(value)}) is ${expected}`, () => {
      expect(isWellFormedTag(value)).to.equal(expected);
    });
  }

  const parseTable: { text: string; allowComma?: boolean; tags: string[]; invalid: string[] }[] = [
    { text: "", tags: [], invalid: [] },
    { text: "web_research", tags: ["web_research"], invalid: [] },
    { text: " web_research ; Summarization;", tags: ["web_research", "summarization"], invalid: [] },
    { text: "translation;translation;TRANSLATION", tags: ["translation"], invalid: [] },
    { text: "translation,testing", tags: [], invalid: ["translation,testing"] },
    { text: "translation,testing", allowComma: true, tags: ["translation", "testing"], invalid: [] },
    { text: "translation; testing, scheduling", allowComma: true, tags: ["translation", "testing", "scheduling"], invalid: [] },
    { text: "translation;cooking;;Legal_Review ", tags: ["translation", "cooking", "legal_review"], invalid: [] },
    { text: "translation;two words;9lives", tags: ["translation"], invalid: ["two words", "9lives"] },
  ];
  for (const { text, allowComma, tags, invalid } of parseTable) {
    it(`parseCapabilityList(${JSON.stringify(text)}${allowComma ? ", comma" : ""})`, () => {
      expect(parseCapabilityList(text, { allowComma })).to.deep.equal({ tags, invalid });
    });
  }

  it("checkCapabilities reads an array with the same rules", () => {
    expect(checkCapabilities(["Testing", "testing", "x", " ", "no way"])).to.deep.equal({ tags: ["testing", "x"], invalid: ["no way"] });
  });
});
