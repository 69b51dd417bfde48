import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import { errorResponses, ok, CREDENTIALS } from "../http/schemas";
import type { BlobStore } from "./blob-store";
import type { Uploads } from "./uploads";
import { BlobData, BlobParams, Envelope, UploadBatchBody, UploadBody, Uploaded, UploadedBatch } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { MAX_UPLOAD_BATCH, MAX_UPLOAD_BYTES } from "@market/core/limits";
import type { FastifyReply } from "fastify";

export { createBlobStore, createDatabaseBlobStore, type BlobStore } from "./blob-store";
export { createUploads, type Uploads } from "./uploads";

/** Base64 of 10 MB plus room for the JSON around it. */
const UPLOAD_BODY_LIMIT = Math.ceil(MAX_UPLOAD_BYTES / 3) * 4 + 64 * 1024;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An upload's bytes: refused unless base64 (`INVALID_BASE64`), non-empty (`UPLOAD_EMPTY`) and at most 10 MB (`UPLOAD_TOO_LARGE`). */
function decoded(data: string): Buffer {
  if (data.length % 4 !== 0 || !BASE64.test(data)) throw new MarketError("INVALID_BASE64");
  const bytes = Buffer.from(data, "base64");
  if (bytes.length === 0) throw new MarketError("UPLOAD_EMPTY");
  if (bytes.length > MAX_UPLOAD_BYTES) throw new MarketError("UPLOAD_TOO_LARGE", `The upload is ${bytes.length} bytes; at most ${MAX_UPLOAD_BYTES}.`);
  return bytes;
}

/** Runs a store, answering a rate refusal's Retry-After header. */
async function storing<T>(reply: FastifyReply, store: () => Promise<T>): Promise<T> {
  try {
    return await store();
  } catch (error) {
    const retryAfter = error instanceof MarketError && error.code === "RATE_LIMITED" ? error.details?.[0]?.retryAfterSeconds : undefined;
    if (retryAfter !== undefined) reply.header("retry-after", String(retryAfter));
    throw error;
  }
}

/** The prefix app.ts registers `storageRoutes` under. */
export const STORAGE_PREFIX = "/api/v1/storage";

/** Blobs (private briefs' ciphertexts), named by the SHA-256 of their bytes: uploads authenticated by their hook, reads public. */
export const storageRoutes: FastifyPluginAsyncTypebox<{
  auth: Authenticate;
  blobs: BlobStore;
  uploads: Pick<Uploads, "store" | "storeMany">;
}> = async (app, { auth, blobs, uploads }) => {
  app.post(
    "/upload",
    {
      onRequest: authenticated(auth),
      bodyLimit: UPLOAD_BODY_LIMIT,
      schema: {
        tags: ["posting"],
        summary: "Store a blob (e.g. a private brief's ciphertext); its rootHash is the SHA-256 of the bytes",
        description:
          "Recorded as the account's upload. An account may hold `UPLOAD_QUOTA_BYTES` (default 100 MB) of blobs no listed task " +
          "references (413 `UPLOAD_QUOTA_EXCEEDED`) and upload `UPLOAD_BYTES_PER_MINUTE` (default 50 MB) a minute (429 " +
          "`RATE_LIMITED` with Retry-After); a blob nothing references is removed `BLOB_GC_GRACE_MS` (default a day) after its latest upload.",
        security: CREDENTIALS,
        body: UploadBody,
        response: { 200: Envelope(Uploaded), ...errorResponses(401, 413, 429, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const bytes = decoded(request.body.data);
      return ok(await storing(reply, () => uploads.store(principal.accountId, bytes)));
    },
  );

  app.post(
    "/upload/batch",
    {
      onRequest: authenticated(auth),
      bodyLimit: UPLOAD_BODY_LIMIT + MAX_UPLOAD_BATCH * 64,
      schema: {
        tags: ["posting"],
        summary: `Store up to ${MAX_UPLOAD_BATCH} blobs at once (e.g. the private briefs of a bulk run's chunk), answered in order`,
        description:
          "Each blob as `POST /upload` stores it, with the same codes; at most 10 MB decoded in all (`UPLOAD_TOO_LARGE`). The quota " +
          "and the rate apply to the blobs together: a refusal stores none of them. A refused blob names its `index` in `details`.",
        security: CREDENTIALS,
        body: UploadBatchBody,
        response: { 200: Envelope(UploadedBatch), ...errorResponses(401, 413, 429, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const items = request.body.blobs.map(({ data }, index) => {
        try {
          return decoded(data);
        } catch (error) {
          if (!(error instanceof MarketError)) throw error;
          throw new MarketError(error.code, `Blob ${index}: ${error.message}`, { details: [{ index, code: error.code, message: error.message }] });
        }
      });
      const total = items.reduce((sum, bytes) => sum + bytes.length, 0);
      if (total > MAX_UPLOAD_BYTES) throw new MarketError("UPLOAD_TOO_LARGE", `The blobs are ${total} bytes in all; at most ${MAX_UPLOAD_BYTES}.`);
      return ok({ blobs: await storing(reply, () => uploads.storeMany(principal.accountId, items)) });
    },
  );

  app.get(
    "/:rootHash",
    {
      schema: {
        tags: ["posting"],
        summary: "Download a stored blob (e.g. a private brief's ciphertext) as base64",
        params: BlobParams,
        response: { 200: Envelope(BlobData), ...errorResponses(404) },
      },
    },
    async (request) => {
      const rootHash = request.params.rootHash.toLowerCase();
      if (!/^0x[0-9a-f]{64}$/.test(rootHash)) throw new MarketError("BLOB_NOT_FOUND", "A rootHash is 0x + 64 hex.");
      const bytes = await blobs.get(rootHash);
      if (!bytes) throw new MarketError("BLOB_NOT_FOUND");
      return ok({ rootHash, data: Buffer.from(bytes).toString("base64") });
    },
  );
};
