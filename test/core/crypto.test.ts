import { expect } from "chai";
import { createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { SigningKey } from "ethers";
import {
  addressFromPublicKey,
  BRIEF_IV_BYTES,
  createBriefKeyWrapper,
  BRIEF_TAG_BYTES,
  contentHash,
  CryptoError,
  decryptBrief,
  encryptBrief,
  normalizePublicKey,
  privateTaskHash,
  publicKeyFromPrivateKey,
  publicTaskHash,
  resultHash,
  unwrapBriefKey,
  wrapBriefKey,
  wrapBriefKeys,
  WRAPPED_KEY_BYTES,
  WRAPPER_MAX_AGE_MS,
} from "@market/core/crypto";

// secp256k1 private key 1: its public key is the generator point G.
const KEY_ONE = `0x${"0".repeat(63)}1`;
const G_UNCOMPRESSED =
  "0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8";
const G_COMPRESSED = "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
// Hardhat's first account.
const HARDHAT_KEY = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const HARDHAT_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const OTHER_KEY = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

function expectCryptoError(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(CryptoError);
    expect((error as CryptoError).code).to.equal(code);
    return;
  }
  expect.fail(`expected CryptoError ${code}`);
}

describe("core/crypto", () => {
  describe("briefs (AES-256-GCM)", () => {
    const briefs = ["", "Summarise this article.", "Résumé ✓ 日本 🚀\nline two", "x".repeat(100_000)];
    for (const brief of briefs) {
      it(`round-trips a ${brief.length}-character brief`, () => {
        const { ciphertext, key } = encryptBrief(brief);
        expect(key).to.have.length(32);
        expect(ciphertext).to.have.length(BRIEF_IV_BYTES + Buffer.byteLength(brief) + BRIEF_TAG_BYTES);
        expect(decryptBrief(ciphertext, key)).to.equal(brief);
      });
    }

    it("uses a fresh key and IV for every brief", () => {
      const a = encryptBrief("same text");
      const b = encryptBrief("same text");
      expect(Buffer.from(a.key).equals(Buffer.from(b.key))).to.equal(false);
      expect(Buffer.from(a.ciphertext.subarray(0, 12)).equals(Buffer.from(b.ciphertext.subarray(0, 12)))).to.equal(false);
    });

    it("lays bytes out as iv || ciphertext || tag (WebCrypto order after the IV)", () => {
      const { ciphertext, key } = encryptBrief("layout check");
      const iv = ciphertext.subarray(0, 12);
      const tag = ciphertext.subarray(ciphertext.length - 16);
      const decipher = createDecipheriv("aes-256-gcm", key, iv);
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([decipher.update(ciphertext.subarray(12, ciphertext.length - 16)), decipher.final()]);
      expect(plain.toString("utf8")).to.equal("layout check");
    });

    it("refuses the wrong key", () => {
      const { ciphertext } = encryptBrief("secret");
      expectCryptoError(() => decryptBrief(ciphertext, encryptBrief("other").key), "BRIEF_DECRYPT_FAILED");
    });

    for (const [part, index] of [
      ["IV", 0],
      ["ciphertext", 14],
      ["tag", -1],
    ] as const) {
      it(`refuses a brief whose ${part} was altered`, () => {
        const { ciphertext, key } = encryptBrief("a secret brief");
        const altered = Uint8Array.from(ciphertext);
        const at = index < 0 ? altered.length + index : index;
        altered[at] = altered[at]! ^ 0x01;
        expectCryptoError(() => decryptBrief(altered, key), "BRIEF_DECRYPT_FAILED");
      });
    }

    it("refuses a truncated brief and a key of the wrong length", () => {
      const { ciphertext, key } = encryptBrief("x");
      expectCryptoError(() => decryptBrief(ciphertext.subarray(0, 27), key), "BRIEF_DECRYPT_FAILED");
      expectCryptoError(() => decryptBrief(ciphertext, key.subarray(0, 16)), "INVALID_KEY_LENGTH");
    });
  });

  describe("keys", () => {
    it("derives the uncompressed public key (130 hex, no 0x)", () => {
      expect(publicKeyFromPrivateKey(KEY_ONE)).to.equal(G_UNCOMPRESSED);
      expect(publicKeyFromPrivateKey(KEY_ONE.slice(2))).to.equal(G_UNCOMPRESSED);
      expect(publicKeyFromPrivateKey(HARDHAT_KEY))
        .to.have.length(130)
        .and.match(/^04[0-9a-f]{128}$/);
    });

    const forms: [string, string][] = [
      ["uncompressed", G_UNCOMPRESSED],
      ["uncompressed with 0x", `0x${G_UNCOMPRESSED}`],
      ["upper case", G_UNCOMPRESSED.toUpperCase()],
      ["compressed", G_COMPRESSED],
      ["compressed with 0x", `0x${G_COMPRESSED}`],
      ["bare 64-byte point", G_UNCOMPRESSED.slice(2)],
    ];
    for (const [name, form] of forms) {
      it(`normalizes a ${name} public key`, () => {
        expect(normalizePublicKey(form)).to.equal(G_UNCOMPRESSED);
      });
    }

    const badKeys: [string, string][] = [
      ["empty", ""],
      ["too short", G_UNCOMPRESSED.slice(0, 100)],
      ["not hex", `04${"zz".repeat(64)}`],
      ["off the curve", `04${"11".repeat(64)}`],
    ];
    for (const [name, key] of badKeys) {
      it(`refuses a public key that is ${name}`, () => {
        expectCryptoError(() => normalizePublicKey(key), "INVALID_PUBLIC_KEY");
      });
    }

    for (const [name, key] of [
      ["short", "abcd"],
      ["zero", "0".repeat(64)],
      ["above the curve order", "f".repeat(64)],
    ]) {
      it(`refuses a private key that is ${name}`, () => {
        expectCryptoError(() => publicKeyFromPrivateKey(key!), "INVALID_PRIVATE_KEY");
      });
    }

    it("computes the checksummed address of a public key in any form", () => {
      const publicKey = publicKeyFromPrivateKey(HARDHAT_KEY);
      expect(addressFromPublicKey(publicKey)).to.equal(HARDHAT_ADDRESS);
      expect(addressFromPublicKey(`0x${publicKey}`)).to.equal(HARDHAT_ADDRESS);
      expect(addressFromPublicKey(SigningKey.computePublicKey(`0x${HARDHAT_KEY}`, true))).to.equal(HARDHAT_ADDRESS);
      expect(addressFromPublicKey(G_UNCOMPRESSED)).to.equal("0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf");
    });
  });

  describe("wrapping brief keys (ECIES)", () => {
    const recipient = publicKeyFromPrivateKey(HARDHAT_KEY);

    for (const [name, form] of [
      ["uncompressed", recipient],
      ["0x-prefixed", `0x${recipient}`],
      ["compressed", SigningKey.computePublicKey(`0x${HARDHAT_KEY}`, true)],
    ] as const) {
      it(`wraps to a ${name} public key and unwraps with the private key`, () => {
        const { key } = encryptBrief("brief");
        const wrapped = wrapBriefKey(key, form);
        expect(wrapped)
          .to.match(/^[0-9a-f]+$/)
          .and.have.length(WRAPPED_KEY_BYTES * 2);
        expect(Buffer.from(unwrapBriefKey(wrapped, HARDHAT_KEY)).equals(Buffer.from(key))).to.equal(true);
        expect(Buffer.from(unwrapBriefKey(`0x${wrapped}`, `0x${HARDHAT_KEY}`)).equals(Buffer.from(key))).to.equal(true);
      });
    }

    it("opens a whole private brief end to end", () => {
      const { ciphertext, key } = encryptBrief("Translate this into French.");
      const wrapped = wrapBriefKey(key, recipient);
      expect(decryptBrief(ciphertext, unwrapBriefKey(wrapped, HARDHAT_KEY))).to.equal("Translate this into French.");
    });

    it("refuses another agent's private key", () => {
      const wrapped = wrapBriefKey(encryptBrief("b").key, recipient);
      expectCryptoError(() => unwrapBriefKey(wrapped, OTHER_KEY), "KEY_UNWRAP_FAILED");
    });

    it("refuses an altered or truncated wrapped key", () => {
      const wrapped = wrapBriefKey(encryptBrief("b").key, recipient);
      const flipped = wrapped.slice(0, -2) + (wrapped.endsWith("00") ? "01" : "00");
      expectCryptoError(() => unwrapBriefKey(flipped, HARDHAT_KEY), "KEY_UNWRAP_FAILED");
      expectCryptoError(() => unwrapBriefKey(wrapped.slice(0, -2), HARDHAT_KEY), "KEY_UNWRAP_FAILED");
      expectCryptoError(() => unwrapBriefKey(`${wrapped.slice(0, -1)}g`, HARDHAT_KEY), "KEY_UNWRAP_FAILED");
    });

    it("refuses a key that is not 32 bytes and a bad recipient", () => {
      expectCryptoError(() => wrapBriefKey(new Uint8Array(16), recipient), "INVALID_KEY_LENGTH");
      expectCryptoError(() => wrapBriefKey(new Uint8Array(32), "04abcd"), "INVALID_PUBLIC_KEY");
    });

    // Decrypts with ethers + node:crypto alone, so the documented wire format is pinned, not just eciesjs's round trip.
    it("produces ephemeral key (65) || nonce (16) || tag (16) || encrypted key (32), keyed by HKDF-SHA256", () => {
      const { key } = encryptBrief("b");
      const wrapped = Buffer.from(wrapBriefKey(key, recipient), "hex");
      const ephemeral = wrapped.subarray(0, 65);
      const nonce = wrapped.subarray(65, 81);
      const tag = wrapped.subarray(81, 97);
      const body = wrapped.subarray(97);
      expect(ephemeral[0]).to.equal(0x04);
      const shared = Buffer.from(new SigningKey(`0x${HARDHAT_KEY}`).computeSharedSecret(`0x${ephemeral.toString("hex")}`).slice(2), "hex");
      const aesKey = Buffer.from(hkdfSync("sha256", Buffer.concat([ephemeral, shared]), Buffer.alloc(0), Buffer.alloc(0), 32));
      const decipher = createDecipheriv("aes-256-gcm", aesKey, nonce);
      decipher.setAuthTag(tag);
      const opened = Buffer.concat([decipher.update(body), decipher.final()]);
      expect(opened.equals(Buffer.from(key))).to.equal(true);
    });
  });

  describe("interoperability with eciesjs", () => {
    it("eciesjs opens a key wrapped here, and a key eciesjs wrapped opens here", async () => {
      const ecies = await import("eciesjs");
      const key = new Uint8Array(randomBytes(32));
      const publicKey = normalizePublicKey(new SigningKey(`0x${HARDHAT_KEY}`).publicKey);
      const ours = Buffer.from(wrapBriefKey(key, publicKey), "hex");
      expect(Buffer.from(ecies.decrypt(Buffer.from(HARDHAT_KEY, "hex"), ours)).equals(Buffer.from(key))).to.equal(true);
      const theirs = Buffer.from(ecies.encrypt(Buffer.from(publicKey, "hex"), key)).toString("hex");
      expect(Buffer.from(unwrapBriefKey(theirs, HARDHAT_KEY)).equals(Buffer.from(key))).to.equal(true);
    });

    it("wraps one key to several agents in one call: eciesjs opens each agent's wrap with that agent's key only", async () => {
      const ecies = await import("eciesjs");
      const key = new Uint8Array(randomBytes(32));
      const secrets = [HARDHAT_KEY, OTHER_KEY, KEY_ONE.slice(2)];
      const wraps = wrapBriefKeys(key, [...secrets.map(publicKeyFromPrivateKey), G_COMPRESSED]);
      expect(wraps).to.have.length(4);
      for (const [i, secret] of secrets.entries()) {
        expect(Buffer.from(ecies.decrypt(Buffer.from(secret, "hex"), Buffer.from(wraps[i]!, "hex"))).equals(Buffer.from(key))).to.equal(true);
        expect(Buffer.from(unwrapBriefKey(wraps[i]!, secret)).equals(Buffer.from(key))).to.equal(true);
        for (const [j, wrapped] of wraps.entries())
          if (j !== i && j !== 3) expectCryptoError(() => unwrapBriefKey(wrapped, secret), "KEY_UNWRAP_FAILED");
      }
      // The compressed form of G is key one's public key: the same agent, a fresh nonce, another wrap.
      expect(Buffer.from(unwrapBriefKey(wraps[3]!, KEY_ONE)).equals(Buffer.from(key))).to.equal(true);
      expect(wraps[3]).to.not.equal(wraps[2]);
      // One ephemeral key per call (per brief), a fresh one for the next call.
      expect(new Set(wraps.map((w) => w.slice(0, 130))).size).to.equal(1);
      expect(wrapBriefKeys(key, [G_COMPRESSED])[0]!.slice(0, 130)).to.not.equal(wraps[0]!.slice(0, 130));
    });

    it("refuses the whole call when one recipient is bad, and wraps to nobody for an empty list", () => {
      expectCryptoError(() => wrapBriefKeys(new Uint8Array(32), [G_COMPRESSED, "04abcd"]), "INVALID_PUBLIC_KEY");
      expectCryptoError(() => wrapBriefKeys(new Uint8Array(31), [G_COMPRESSED]), "INVALID_KEY_LENGTH");
      expect(wrapBriefKeys(new Uint8Array(32), [])).to.deep.equal([]);
    });

    it("wraps the same key to the same recipient differently every time, before and after precomputing its point", () => {
      const key = new Uint8Array(randomBytes(32));
      const publicKey = new SigningKey(`0x${HARDHAT_KEY}`).publicKey;
      const wraps = Array.from({ length: 6 }, () => wrapBriefKey(key, publicKey));
      expect(new Set(wraps).size).to.equal(6);
      for (const wrapped of wraps) expect(Buffer.from(unwrapBriefKey(wrapped, HARDHAT_KEY)).equals(Buffer.from(key))).to.equal(true);
    });
  });

  describe("a wrapper: one ephemeral key for many briefs", () => {
    const ephemeralOf = (wrapped: string) => wrapped.slice(0, 130);

    it("wraps many briefs to several agents: each agent opens its wraps (here and with eciesjs), and only its own", async () => {
      const ecies = await import("eciesjs");
      const wrapper = createBriefKeyWrapper();
      const secrets = [HARDHAT_KEY, OTHER_KEY, KEY_ONE.slice(2)];
      const readers = secrets.map(publicKeyFromPrivateKey);
      const briefs = Array.from({ length: 4 }, () => encryptBrief("a private brief"));
      const wraps = briefs.map(({ key }) => wrapper.wrap(key, readers));
      for (const [b, { key, ciphertext }] of briefs.entries()) {
        expect(wraps[b]).to.have.length(3);
        for (const [i, secret] of secrets.entries()) {
          const opened = unwrapBriefKey(wraps[b]![i]!, secret);
          expect(decryptBrief(ciphertext, opened)).to.equal("a private brief");
          expect(Buffer.from(ecies.decrypt(Buffer.from(secret, "hex"), Buffer.from(wraps[b]![i]!, "hex"))).equals(Buffer.from(key))).to.equal(true);
          for (const j of secrets.keys()) if (j !== i) expectCryptoError(() => unwrapBriefKey(wraps[b]![j]!, secret), "KEY_UNWRAP_FAILED");
        }
      }
      // One ephemeral key for all of them; every wrap still has its own nonce, so no two are alike, even of one key.
      expect(new Set(wraps.flat().map(ephemeralOf)).size).to.equal(1);
      const again = wrapper.wrap(briefs[0]!.key, readers);
      expect(new Set([...wraps.flat(), ...again]).size).to.equal(15);
      expect(new Set([...wraps.flat(), ...again].map((w) => w.slice(130, 162))).size).to.equal(15);
      // Another wrapper has an ephemeral key of its own.
      expect(ephemeralOf(createBriefKeyWrapper().wrap(briefs[0]!.key, readers)[0]!)).to.not.equal(ephemeralOf(again[0]!));
    });

    it("replaces its ephemeral key after maxWraps wraps and after maxAgeMs", () => {
      let now = 1_000_000;
      const wrapper = createBriefKeyWrapper({ maxWraps: 4, now: () => now });
      const reader = publicKeyFromPrivateKey(HARDHAT_KEY);
      const key = encryptBrief("x").key;
      const first = wrapper.wrap(key, [reader, reader]).map(ephemeralOf);
      const second = wrapper.wrap(key, [reader, reader]).map(ephemeralOf);
      expect(second).to.deep.equal(first); // four wraps: the bound, not past it
      const third = wrapper.wrap(key, [reader]).map(ephemeralOf);
      expect(third[0]).to.not.equal(first[0]);
      now += WRAPPER_MAX_AGE_MS - 1;
      expect(ephemeralOf(wrapper.wrap(key, [reader])[0]!)).to.equal(third[0]);
      now += 1;
      const aged = ephemeralOf(wrapper.wrap(key, [reader])[0]!);
      expect(aged).to.not.equal(third[0]);
      expect(Buffer.from(unwrapBriefKey(wrapper.wrap(key, [reader])[0]!, HARDHAT_KEY)).equals(Buffer.from(key))).to.equal(true);
    });

    it("refuses the whole call as wrapBriefKeys does, and wraps on afterwards", () => {
      const wrapper = createBriefKeyWrapper();
      expectCryptoError(() => wrapper.wrap(new Uint8Array(32), [G_COMPRESSED, "04abcd"]), "INVALID_PUBLIC_KEY");
      expectCryptoError(() => wrapper.wrap(new Uint8Array(31), [G_COMPRESSED]), "INVALID_KEY_LENGTH");
      expect(wrapper.wrap(new Uint8Array(32), [])).to.deep.equal([]);
      const key = encryptBrief("y").key;
      expect(Buffer.from(unwrapBriefKey(wrapper.wrap(key, [G_COMPRESSED])[0]!, KEY_ONE)).equals(Buffer.from(key))).to.equal(true);
    });
  });

  describe("hashes (known answers)", () => {
    const EMPTY = "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const ABC = "0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const UNICODE = "0x8e9e22971f849840149f8e2bedf6ec9539fe4a359bd970ab09f9b5cc17940aea"; // "Résumé ✓ 日本" as UTF-8
    const BYTES_0_255 = "0x40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880";
    const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);

    const table: [string, () => string, string][] = [
      ["publicTaskHash('')", () => publicTaskHash(""), EMPTY],
      ["publicTaskHash('abc')", () => publicTaskHash("abc"), ABC],
      ["publicTaskHash(unicode)", () => publicTaskHash("Résumé ✓ 日本"), UNICODE],
      ["resultHash('abc')", () => resultHash("abc"), ABC],
      ["resultHash(unicode)", () => resultHash("Résumé ✓ 日本"), UNICODE],
      ["privateTaskHash(bytes 0..255)", () => privateTaskHash(allBytes), BYTES_0_255],
      ["contentHash(bytes 0..255)", () => contentHash(allBytes), BYTES_0_255],
      ["contentHash(empty)", () => contentHash(new Uint8Array()), EMPTY],
    ];
    for (const [name, compute, expected] of table) {
      it(`${name} = ${expected.slice(0, 12)}...`, () => {
        expect(compute()).to.equal(expected);
      });
    }

    it("hashes a public brief byte for byte (no trimming)", () => {
      expect(publicTaskHash("abc ")).to.not.equal(ABC);
    });

    it("private task hash is the SHA-256 of the uploaded ciphertext, equal to its content hash", () => {
      const { ciphertext } = encryptBrief("brief");
      expect(privateTaskHash(ciphertext))
        .to.equal(contentHash(ciphertext))
        .and.match(/^0x[0-9a-f]{64}$/);
    });
  });
});
