import { Type, type Static } from "@sinclair/typebox";
import { MAX_UPLOAD_BATCH } from "../limits";

/** POST /api/v1/storage/upload. */
export const UploadBody = Type.Object(
  { data: Type.String({ description: "Base64 of the bytes; non-empty, at most 10 MB decoded." }) },
  { additionalProperties: false },
);
export const Uploaded = Type.Object({ rootHash: Type.String(), size: Type.Integer() });
export type Uploaded = Static<typeof Uploaded>;

/**
 * POST /api/v1/storage/upload/batch (issue 30): up to `MAX_UPLOAD_BATCH` blobs at once, at most 10 MB decoded in all,
 * answered in order; a bulk run uploads a chunk's private briefs in one request.
 */
export const UploadBatchBody = Type.Object(
  {
    blobs: Type.Array(UploadBody, {
      minItems: 1,
      maxItems: MAX_UPLOAD_BATCH,
      description: `The blobs, in order (at most ${MAX_UPLOAD_BATCH}, 10 MB decoded in all).`,
    }),
  },
  { additionalProperties: false },
);
export const UploadedBatch = Type.Object({ blobs: Type.Array(Uploaded) });
export type UploadedBatch = Static<typeof UploadedBatch>;

/** GET /api/v1/storage/{rootHash}. */
export const BlobParams = Type.Object({ rootHash: Type.String({ maxLength: 100 }) });
export const BlobData = Type.Object({ rootHash: Type.String(), data: Type.String() });
export type BlobData = Static<typeof BlobData>;
