/**
 * The app's API client: the SDK's own HTTP layer (sdk/src/http.ts: the `{ success, data }` envelope, `ApiError` with
 * the stable code) on this origin, and one function per route the pages use, typed with the API's TypeBox shapes
 * from core/api (type-only imports: no schema code is shipped to the browser).
 */
import { createHttp } from "../../sdk/src/http";
import type {
  ApiKeyList,
  Badges,
  BrowseAnswer,
  CreatedApiKey,
  ExecutorsAnswer,
  ExploreAnswer,
  ExploreQuery,
  AgentAnswer,
  Leaderboard,
  LoggedOut,
  NonceAnswer,
  PostedAnswer,
  Reputation,
  RevokedApiKey,
  RevokedApiKeys,
  ServiceList,
  ServiceAnswer,
  OwnedAgentList,
  Session,
  SettlementAnswer,
  SettlementTx,
  BuildTaskBody,
  BuiltTask,
  IndexTaskBody,
  ListingOutcome,
  VerdictAnswer,
  VerdictBody,
  SkillList,
  TaskView,
  WhoAmI,
} from "@market/core/api";

export { ApiError } from "../../sdk/src/errors";

const origin = () => window.location.origin;
const anonymous = () => createHttp({ baseUrl: origin(), timeoutMs: 30_000 });
/** With the signed-in session's token when there is one. */
const as = (token?: string) => createHttp({ baseUrl: origin(), timeoutMs: 30_000, ...(token ? { sessionToken: token } : {}) });

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== "") search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
};

export const api = {
  nonce: (address: string) => anonymous().post<NonceAnswer>("/api/v1/auth/nonce", { address }),
  verify: (message: string, signature: string) => anonymous().post<Session>("/api/v1/auth/verify", { message, signature }),
  logout: (token: string) => as(token).post<LoggedOut>("/api/v1/auth/logout"),
  whoami: (token: string) => as(token).get<WhoAmI>("/api/v1/api-keys/whoami"),

  listApiKeys: (token: string) => as(token).get<ApiKeyList>("/api/v1/api-keys"),
  createApiKey: (token: string, name: string) => as(token).post<CreatedApiKey>("/api/v1/api-keys", { name }),
  revokeApiKey: (token: string, id: number) => as(token).del<RevokedApiKey>(`/api/v1/api-keys/${id}`),
  revokeAllApiKeys: (token: string) => as(token).post<RevokedApiKeys>("/api/v1/api-keys/revoke-all"),

  browse: (capabilities?: string) => anonymous().get<BrowseAnswer>(`/api/v1/a2a/tasks${query({ capabilities })}`),
  explore: (filter: ExploreQuery) => anonymous().get<ExploreAnswer>(`/api/v1/tasks${query({ ...filter })}`),
  task: (taskHash: string, token?: string) => as(token).get<TaskView>(`/api/v1/tasks/${encodeURIComponent(taskHash)}`),
  posted: (token: string, cursor?: string) => as(token).get<PostedAnswer>(`/api/v1/a2a/tasks/posted${query({ limit: 50, cursor })}`),

  settlement: () => anonymous().get<SettlementAnswer>("/api/v1/health/settlement"),
  buildTask: (token: string, body: BuildTaskBody) => as(token).post<BuiltTask>("/api/v1/tasks", body),
  listTask: (token: string, body: IndexTaskBody) => as(token).post<ListingOutcome>("/api/v1/a2a/tasks/index", body),
  settle: (token: string, taskHash: string, action: "cancel" | "claim-timeout" | "dispute") =>
    as(token).post<SettlementTx>(`/api/v1/a2a/tasks/${encodeURIComponent(taskHash)}/${action}`),
  verdict: (token: string, taskHash: string, body: VerdictBody) =>
    as(token).post<VerdictAnswer>(`/api/v1/a2a/tasks/${encodeURIComponent(taskHash)}/verdict`, body),

  executors: (params: { capabilities?: string; chain?: string; limit?: number } = {}) =>
    anonymous().get<ExecutorsAnswer>(`/api/v1/a2a/executors${query(params)}`),
  executor: (address: string) => anonymous().get<AgentAnswer>(`/api/v1/a2a/executors/${encodeURIComponent(address)}`),
  leaderboard: (limit = 50) => anonymous().get<Leaderboard>(`/api/v1/reputation/leaderboard${query({ limit })}`),
  reputation: (address: string) => anonymous().get<Reputation>(`/api/v1/reputation/${encodeURIComponent(address)}`),
  badges: (address: string) => anonymous().get<Badges>(`/api/v1/reputation/${encodeURIComponent(address)}/badges`),

  services: (params: { agent?: string; limit?: number } = {}) => anonymous().get<ServiceList>(`/api/v1/marketplace/services${query(params)}`),
  service: (serviceId: string) => anonymous().get<ServiceAnswer>(`/api/v1/marketplace/services/${encodeURIComponent(serviceId)}`),
  myAgents: (token: string) => as(token).get<OwnedAgentList>("/api/v1/agents/mine"),
  skills: (params: { tag?: string; q?: string; limit?: number; offset?: number } = {}) =>
    anonymous().get<SkillList>(`/api/v1/skills${query(params)}`),
};
