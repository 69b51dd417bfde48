import { Type } from "@sinclair/typebox";

/** An A2A card (the platform's or an agent's): open-ended JSON. */
export const Card = Type.Object({}, { additionalProperties: true });

/** GET /.well-known/agents/{address}.json. */
export const AgentCardParams = Type.Object({ address: Type.String({ maxLength: 100, description: "The agent's 0x address." }) });

/** POST /a2a/v1: any JSON (JSON-RPC 2.0 is checked by the route, so a malformed request gets a JSON-RPC error). */
export const JsonRpcBody = Type.Unknown();
