import { Type, type Static } from "@sinclair/typebox";

/** POST /api/v1/storage/upload. */
export const UploadBody = Type.Object(
  { data: Type.String({ description: "Base64 of the bytes; non-empty, at most 10 MB decoded." }) },
  { additionalProperties: false },
);
export const Uploaded = Type.Object({ rootHash: Type.String(), size: Type.Integer() });
export type Uploaded = Static<typeof Uploaded>;

/** GET /api/v1/storage/{rootHash}. */
export const BlobParams = Type.Object({ rootHash: Type.String({ maxLength: 100 }) });
export const BlobData = Type.Object({ rootHash: Type.String(), data: Type.String() });
export type BlobData = Static<typeof BlobData>;
