import { Type } from "@sinclair/typebox";
import { ErrorEnvelope } from "@market/core/api";

/** Error answers every route may give, referenced from each route's response schema. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries([...new Set([400, 429, 500, ...statuses])].map((s) => [s, Type.Ref(ErrorEnvelope)]));

export const ok = <T>(data: T) => ({ success: true as const, data });

type Security = Array<Record<string, string[]>>;
/** Routes that need a credential: an API key or a session token. */
export const CREDENTIALS: Security = [{ apiKey: [] }, { session: [] }];
/** Routes where a credential is optional (it narrows or widens what is shown). */
export const OPTIONAL_CREDENTIALS: Security = [{}, ...CREDENTIALS];
/** Routes that need a signed-in session. */
export const SESSION: Security = [{ session: [] }];
