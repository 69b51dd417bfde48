/**
 * web/src/node/crypto.ts, the browser build's `node:crypto` (core/crypto's five calls on @noble), against Node's own:
 * the same bytes both ways, so a brief sealed in the page opens in the SDK, the runtime and the server, and back.
 */
import * as node from "node:crypto";
import { expect } from "chai";
import * as browser from "../../web/src/node/crypto";

/** The calls core/crypto makes, as both implementations offer them. */
interface Impl {
  createCipheriv(
    algorithm: "aes-256-gcm",
    key: Uint8Array,
    iv: Uint8Array,
  ): { update(t: string, e: "utf8"): Buffer; final(): Buffer; getAuthTag(): Buffer };
  createDecipheriv(
    algorithm: "aes-256-gcm",
    key: Uint8Array,
    iv: Uint8Array,
  ): { setAuthTag(t: Uint8Array): void; update(b: Uint8Array): Buffer; final(): Buffer };
}

const seal = (impl: Impl, key: Uint8Array, iv: Uint8Array, text: string) => {
  const cipher = impl.createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return { body, tag: cipher.getAuthTag() };
};
const open = (impl: Impl, key: Uint8Array, iv: Uint8Array, sealed: { body: Uint8Array; tag: Uint8Array }) => {
  const decipher = impl.createDecipheriv("aes-256-gcm", key, iv);
  decipher.setAuthTag(sealed.tag);
  return Buffer.concat([decipher.update(sealed.body), decipher.final()]).toString("utf8");
};

describe("web: node:crypto for the browser build", () => {
  const key = node.randomBytes(32);
  const text = "A confidential brief: summarise the Q3 plan — données, 数据, 🚢.";

  for (const ivBytes of [12, 16]) {
    it(`seals and opens AES-256-GCM as node:crypto does (${ivBytes}-byte IV)`, () => {
      const iv = node.randomBytes(ivBytes);
      const fromPage = seal(browser, key, iv, text);
      const fromNode = seal(node, key, iv, text);
      expect(Buffer.from(fromPage.body).equals(fromNode.body)).to.equal(true);
      expect(Buffer.from(fromPage.tag).equals(fromNode.tag)).to.equal(true);
      expect(open(node, key, iv, fromPage)).to.equal(text);
      expect(open(browser, key, iv, fromNode)).to.equal(text);
    });
  }

  it("refuses an altered ciphertext", () => {
    const iv = node.randomBytes(12);
    const sealed = seal(node, key, iv, text);
    sealed.body[0]! ^= 1;
    expect(() => open(browser, key, iv, sealed)).to.throw();
  });

  it("hashes, derives and draws bytes as node:crypto does", () => {
    const data = Buffer.from(text);
    expect(browser.createHash("sha256").update(data).digest("hex")).to.equal(node.createHash("sha256").update(data).digest("hex"));
    const ikm = node.randomBytes(97);
    const derived = Buffer.from(browser.hkdfSync("sha256", ikm, Buffer.alloc(0), Buffer.alloc(0), 32));
    expect(derived.equals(Buffer.from(node.hkdfSync("sha256", ikm, Buffer.alloc(0), Buffer.alloc(0), 32)))).to.equal(true);
    const drawn = browser.randomBytes(32);
    expect(drawn).to.have.length(32);
    expect(drawn.equals(browser.randomBytes(32))).to.equal(false);
  });
});
