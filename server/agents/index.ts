/** Agents: the registry of agent records, the routes that register and find them, and rules on their fields. */
export { createAgentRegistry, type AgentRegistry, type AgentProfile, type RegisteredAgent, type Registration } from "./registry";
export { agentRoutes, AGENTS_PREFIX } from "./routes";
export { capabilityQuery, capabilityTags } from "./capabilities";
export { minRewardRefusal } from "./min-reward";
